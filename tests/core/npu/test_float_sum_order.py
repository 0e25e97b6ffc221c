"""Float sums in the order of IREE's CPU build, bit for bit.

Independent truth: IREE's CPU build of each dispatch, run on the same
inputs; and IREE's own lowering configs, read from a text it printed.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from npu_studio.core.npu.numerics.check import check
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.run.dispatches.cpu_reductions import parse_configs
from quant_models import f32_conv_model
from tests.zoo_cache import cached_workspace

# (channels in, out, size, kernel, stride, pad): IREE sums the first as
# (kh, kw, c) with FMAs (ConvTileAndDecomposeExpert, reduction tiles 8, 1, 1),
# the second as dots (its stride-2 output loop unrolled: a product, then a
# horizontal add), the third (a 1x1 conv: a matmul) over k in tiles of 16 with FMAs.
SHAPES = [(8, 16, 12, 3, 1, 0), (3, 8, 32, 3, 2, 1), (64, 64, 14, 1, 1, 0)]


def _workspace(shape):
    def make(folder):
        path = folder / "conv.onnx"
        onnx.save(f32_conv_model(*shape), str(path))
        return path
    return cached_workspace("f32conv-" + "-".join(map(str, shape)), make)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_f32_conv_sums_in_iree_order_bit_for_bit(shape, default_target):
    ws = _workspace(shape)
    program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
    conv = next(d for d in program.dispatches if d.kind in ("conv", "matmul"))
    assert conv.legal and conv.unit == "mac"
    x = np.random.default_rng(1).standard_normal((1, shape[0], shape[2], shape[2])).astype(np.float32)
    report = check(ws, program, [x], iree_order=True, onnxruntime=False)
    by_index = {d.index: d for d in report.dispatches}
    d = by_index[conv.index]
    assert d.computed_by == "npu" and d.max_error == 0.0 and not d.note, (d.max_error, d.note)
    assert report.vs_iree.max_error == 0.0


def test_numpy_order_is_not_iree_order(default_target):
    """The shapes above are order-sensitive: summed in numpy's order, some result moves."""
    errors = []
    for shape in SHAPES:
        ws = _workspace(shape)
        program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
        x = np.random.default_rng(1).standard_normal((1, shape[0], shape[2], shape[2])).astype(np.float32)
        report = check(ws, program, [x], iree_order=False, onnxruntime=False)
        errors.append(report.vs_iree.max_error)
    assert max(errors) > 0.0, errors


CONFIGS = """
  hal.executable private @m$async_dispatch_3 {
    hal.executable.variant public @embedded_elf_x86_64 target(#executable_target_embedded_elf_x86_64) {
      hal.executable.export public @m$async_dispatch_3_conv ordinal(0) layout(#pipeline_layout) attributes {} {
      builtin.module {
        func.func @m$async_dispatch_3_conv() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<ConvTileAndDecomposeExpert>>} {
          %5 = linalg.fill {lowering_config = #iree_cpu.lowering_config<vector_common_parallel = [1, 2, 1, 5]>} ins(%cst : f32) outs(%4 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
          %7 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%6, %3 : tensor<1x8x12x12xf32>, tensor<16x8x3x3xf32>) outs(%5 : tensor<1x16x10x10xf32>) attrs =  {lowering_config = #iree_cpu.lowering_config<distribution = [0, 2, 5, 10, 0, 0, 0], vector_common_parallel = [1, 2, 1, 5, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 8, 1, 1]>} {
        }
      }
    }
  }
  hal.executable private @m$async_dispatch_4 {
        func.func @m$async_dispatch_4_elementwise() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>} {
          %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%0 : tensor<8xf32>) outs(%1 : tensor<8xf32>) attrs =  {lowering_config = #iree_cpu.lowering_config<distribution = [8], vector_common_parallel = [8]>} {
  }
"""


def test_lowering_configs_are_read_per_executable():
    configs = parse_configs(CONFIGS)
    assert set(configs) == {"m$async_dispatch_3", "m$async_dispatch_4"}
    assert configs["m$async_dispatch_4"] == []  # no reduction
    (conv,) = configs["m$async_dispatch_3"]
    assert conv.pipeline == "ConvTileAndDecomposeExpert"
    assert conv.reduction_tiles() == (8, 1, 1) and conv.parallel_tiles() == (1, 2, 1, 5)


def test_npu_reduction_tiles_follow_iree_order_only_when_they_nest():
    from npu_studio.core.npu.numerics.ordered_sum import FloatOrder, compatible

    # IREE sums (c, kh, kw) of a 16 x 3 x 3 reduction as c in tiles of 8 outermost, then kh, kw, c.
    order = FloatOrder(tiles=(8, 1, 1), fma=True)
    halves = [((0, 0, 0), (8, 3, 3)), ((8, 0, 0), (8, 3, 3))]  # the NPU splits c at IREE's tile edge
    assert compatible(order, halves)
    quarters = [((0, 0, 0), (4, 3, 3)), ((4, 0, 0), (4, 3, 3))]  # ... inside IREE's tile: kh, kw interleave
    assert not compatible(order, quarters)
    rows = [((0, 0, 0), (16, 1, 3)), ((0, 1, 0), (16, 2, 3))]  # splitting kh puts c's tiles out of order
    assert not compatible(order, rows)


def test_unreadable_configs_leave_numpy_order_and_say_so(default_target, monkeypatch):
    import importlib

    from npu_studio.core.errors import StudioError

    check_module = importlib.import_module("npu_studio.core.npu.numerics.check")

    def fail(flow, cache_dir, *, root):
        raise StudioError(flow, "iree-compile exited with 1")
    monkeypatch.setattr(check_module, "reduction_configs", fail)
    ws = _workspace(SHAPES[0])
    program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    report = check(ws, program, [x], iree_order=True, onnxruntime=False)
    assert any("lowering configs could not be read" in n and "iree-compile exited with 1" in n
               for n in report.notes), report.notes
