"""Data-movement dispatches show their kind everywhere: index, table, detail, NPU detail, schedule summary.

The flow module is written here by hand, so each dispatch's kind is known from the text itself:
#0 stores an 8x8 plane into the middle of a 12x12 one (into a splat of 0.0: a pad), #1 loads a
6-column window of a 12-column tensor (a slice), #2 is a linalg.generic whose input map swaps the
two inner dims (a transpose, which IREE's index calls copy/transpose).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.ir.dispatch_index import index_text  # noqa: E402
from npu_studio.core.npu.plan.passes import run_npu_pipeline  # noqa: E402
from npu_studio.core.npu.report.schedule_model import simulate_run  # noqa: E402
from npu_studio.ui.dispatches.panel import DispatchPanel  # noqa: E402
from npu_studio.core.npu_columns import detail_text  # noqa: E402
from npu_studio.ui.schedule.summary import ScheduleSummary  # noqa: E402

_DT = "!iree_tensor_ext.dispatch.tensor"


def _memcpy(n: int, src: str, dst: str, access: str, load: tuple, store: tuple) -> str:
    """A slow_memcpy executable: load `load` = (offsets, sizes) of src, store at `store` into dst."""
    lo, ls = load
    so, ss = store
    part = "x".join(map(str, ls))
    return f'''
  flow.executable private @m$async_dispatch_{n} {{
    flow.executable.export public @m$async_dispatch_{n}_slow_memcpy workgroups() -> (index, index, index) {{
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }}
    builtin.module {{
      func.func @m$async_dispatch_{n}_slow_memcpy(%arg0: {_DT}<readonly:tensor<{src}xf32>>, %arg1: {_DT}<{access}:tensor<{dst}xf32>>) {{
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = {list(lo)}, sizes = {list(ls)}, strides = [1, 1, 1] : {_DT}<readonly:tensor<{src}xf32>> -> tensor<{part}xf32>
        iree_tensor_ext.dispatch.tensor.store %0, %arg1, offsets = {list(so)}, sizes = {list(ss)}, strides = [1, 1, 1] : tensor<{part}xf32> -> {_DT}<{access}:tensor<{dst}xf32>>
        return
      }}
    }}
  }}'''


TRANSPOSE = f'''
  flow.executable private @m$async_dispatch_2 {{
    flow.executable.export public @m$async_dispatch_2_transpose workgroups() -> (index, index, index) {{
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }}
    builtin.module {{
      func.func @m$async_dispatch_2_transpose(%arg0: {_DT}<readonly:tensor<3x12x6xf32>>, %arg1: {_DT}<writeonly:tensor<3x6x12xf32>>) {{
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [3, 12, 6], strides = [1, 1, 1] : {_DT}<readonly:tensor<3x12x6xf32>> -> tensor<3x12x6xf32>
        %1 = tensor.empty() : tensor<3x6x12xf32>
        %2 = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%0 : tensor<3x12x6xf32>) outs(%1 : tensor<3x6x12xf32>) {{
        ^bb0(%in: f32, %out: f32):
          linalg.yield %in : f32
        }} -> tensor<3x6x12xf32>
        iree_tensor_ext.dispatch.tensor.store %2, %arg1, offsets = [0, 0, 0], sizes = [3, 6, 12], strides = [1, 1, 1] : tensor<3x6x12xf32> -> {_DT}<writeonly:tensor<3x6x12xf32>>
        return
      }}
    }}
  }}'''

FLOW = "module {" + _memcpy(0, "3x8x8", "3x12x12", "readwrite", ((0, 0, 0), (3, 8, 8)), ((0, 2, 2), (3, 8, 8))) \
    + _memcpy(1, "3x12x12", "3x12x6", "writeonly", ((0, 0, 3), (3, 12, 6)), ((0, 0, 0), (3, 12, 6))) + TRANSPOSE + '''
  util.func public @main(%a: tensor<3x8x8xf32>) -> tensor<3x6x12xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %b = flow.tensor.splat %cst : tensor<3x12x12xf32>
    %r = flow.dispatch @m$async_dispatch_0::@m$async_dispatch_0_slow_memcpy(%a, %b) : (tensor<3x8x8xf32>, tensor<3x12x12xf32>) -> %b
    %s = flow.dispatch @m$async_dispatch_1::@m$async_dispatch_1_slow_memcpy(%r) : (tensor<3x12x12xf32>) -> tensor<3x12x6xf32>
    %t = flow.dispatch @m$async_dispatch_2::@m$async_dispatch_2_transpose(%s) : (tensor<3x12x6xf32>) -> tensor<3x6x12xf32>
    util.return %t : tensor<3x6x12xf32>
  }
}
'''
KINDS = {0: "pad", 1: "slice", 2: "copy/transpose"}  # from the text above (#0 writes into a splat)


def test_every_data_movement_dispatch_shows_its_kind_in_table_detail_npu_and_schedule(qtbot):
    index = index_text(FLOW, "flow")
    assert {r.index: r.kind for r in index.dispatches} == KINDS

    panel = DispatchPanel()
    qtbot.addWidget(panel)
    panel.table.set_index(index)
    kind_col = panel.table.column("kind")
    shown = {panel.table.item(r, 0).data(0x0100): panel.table.item(r, kind_col).text()
             for r in range(panel.table.rowCount())}
    assert shown == KINDS
    assert sorted(panel.table.kinds()) == sorted(KINDS.values())  # the kind filter offers them

    program = run_npu_pipeline(FLOW, index=index)
    assert {d.index: d.kind for d in program.dispatches} == KINDS
    assert all(d.legal and d.unit == "dma" for d in program.dispatches)  # data movement on the DMA
    # the transfer the NPU makes of each (the pad's border comes from the host's splat of 0)
    assert {d.index: d.transfer for d in program.dispatches}[2] == "transpose"
    assert {d.index: d.pad_value for d in program.dispatches}[0] == "0.0"
    for n, kind in KINDS.items():
        assert detail_text(program, n).startswith(f"NPU ({program.target.name}): {kind} -> NPU dma")
        panel.show_record(index.dispatches[n], {}, detail_text(program, n))
        assert panel.detail.toPlainText().startswith(f"Dispatch #{n}: {kind}")

    summary = ScheduleSummary()
    qtbot.addWidget(summary)
    summary.show_model(simulate_run(program).model)
    assert {n: summary.cell(n, "kind") for n in KINDS} == KINDS
    assert "none" not in {summary.cell(n, "kind") for n in KINDS}
