"""Nothing waits forever: a dispatch inside an initializer, and a plugin call that never returns.

The model is shape gymnastics built here (Transpose/Gather/Slice/Reshape on
constants kept in the parameter archive, Transpose/Concat on the input): IREE
cannot fold constants it reads from the archive, so it hoists their
arithmetic into `util.initializer`s that dispatch at module load. Independent
truths: IREE's own flow IR (an initializer holds an NPU dispatch),
onnxruntime on the same inputs, and a call log written by hand for the
watcher.
"""

from __future__ import annotations

import re
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.compile.params import ParamOptions
from npu_studio.core.errors import RunFailed
from npu_studio.core.npu.hal.call_log import CallLimits, CallWatch, begin_line, end_line, finished
from npu_studio.core.npu.hal.npu_run import run_npu
from npu_studio.core.npu.numerics import TileFault
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.run import time_budget
from npu_studio.core.workspace.workspace import compile_model
from tests.core.onnx_reference import run_onnxruntime


def shape_gymnastics(path):
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (4, 8, 6)).astype(np.float32), "C"),
             numpy_helper.from_array(rng.uniform(-1, 1, (32, 8)).astype(np.float32), "D"),
             numpy_helper.from_array(np.array([3, 0, 2, 1], np.int64), "idx"),
             numpy_helper.from_array(np.array([1], np.int64), "s0"),
             numpy_helper.from_array(np.array([5], np.int64), "s1"),
             numpy_helper.from_array(np.array([2], np.int64), "ax"),
             numpy_helper.from_array(np.array([8, 16], np.int64), "shp")]
    nodes = [helper.make_node("Transpose", ["C"], ["ct"], perm=[1, 0, 2]),  # 8x4x6
             helper.make_node("Gather", ["ct", "idx"], ["cg"], axis=1),
             helper.make_node("Slice", ["cg", "s0", "s1", "ax"], ["cs"]),  # 8x4x4
             helper.make_node("Reshape", ["cs", "shp"], ["cr"]),  # 8x16
             helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),  # 8x16
             helper.make_node("Concat", ["xt", "cr"], ["cat"], axis=1),  # 8x32
             helper.make_node("Transpose", ["D"], ["dt"], perm=[1, 0]),
             helper.make_node("Mul", ["dt", "dt"], ["dsq"]),  # constants only: an initializer computes it
             helper.make_node("Mul", ["cat", "dsq"], ["out"])]
    g = helper.make_graph(nodes, "gym", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [8, 32])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


def initializer_dispatches(flow_text: str) -> list[str]:
    """The export each `flow.dispatch` inside a `util.initializer` calls, read from IREE's flow IR."""
    found, inside = [], False
    for line in flow_text.splitlines():
        if line.startswith("  util.initializer"):
            inside = True
        elif line.startswith("  }"):
            inside = False
        elif inside:
            m = re.search(r"flow\.dispatch @[\w$]+::@([\w$]+)", line)
            if m:
                found.append(m.group(1))
    return found


@pytest.fixture(scope="module")
def gym_ws(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gym")
    ws = compile_model(shape_gymnastics(tmp / "gym.onnx"), tmp / "ws", params=ParamOptions(threshold_bytes=256))
    program = run_for_workspace(ws)
    in_init = initializer_dispatches(ws.snapshot_path("flow").read_text(encoding="utf-8"))
    npu_in_init = [d.index for d in program.dispatches if d.legal and d.symbol in in_init]
    assert npu_in_init, f"no NPU dispatch inside an initializer: {in_init}"
    return ws, npu_in_init, [d.index for d in program.dispatches if d.legal and d.symbol not in in_init]


def test_dispatch_inside_an_initializer_runs_in_process(gym_ws, cc):
    ws, at_load, _ = gym_ws
    report = run_npu(ws, seed=2, timeout=300)  # before the fix: waited forever
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    np.testing.assert_allclose(report.outputs[0], ort, rtol=1e-5, atol=1e-6)
    assert report.ok, "\n".join(report.summary_lines())
    by_c = [c for c in report.calls if c.computed_by == "npu-plugin-c"]
    assert [c.index for c in by_c] == at_load and all(c.max_error == 0 for c in by_c)
    assert report.plugin_calls == len(report.calls) == len({d for r in report.variant.imports for d in r.dispatches})
    assert any("inside an initializer" in n for n in report.notes)


@pytest.mark.parametrize("mode", ["in-process", "standalone"])
def test_plugin_call_that_never_returns_is_stopped_naming_its_dispatch(gym_ws, cc, monkeypatch, mode):
    ws, at_load, later = gym_ws
    monkeypatch.setattr(time_budget, "NPU_CALL_FLOOR", 2.0)
    for dispatch in (at_load[0], later[-1]):  # one while IREE loads the module, one in the entry function
        t0 = time.monotonic()
        with pytest.raises(RunFailed) as err:
            run_npu(ws, seed=2, fault=TileFault(dispatch, 0, hang=True), mode=mode, cpu_build=False,
                    onnxruntime=False)
        line = str(err.value)
        assert "\n" not in line and f"dispatch #{dispatch} " in line and "no result from the NPU model within 2 s" in line
        assert time.monotonic() - t0 < 60


def test_whole_run_limit_names_the_dispatch_in_flight(gym_ws, cc):
    ws, _, later = gym_ws
    with pytest.raises(RunFailed) as err:
        run_npu(ws, seed=2, fault=TileFault(later[-1], 0, hang=True), timeout=8, cpu_build=False, onnxruntime=False,
                compare_dispatches=False)
    line = str(err.value)
    assert "\n" not in line and "did not finish within 8 s" in line and f"while dispatch #{later[-1]} " in line


def test_watch_reads_the_log_as_it_grows(gym_ws, tmp_path):
    """A hand-written call log and a hand-moved clock: the limit applies to the call in flight only."""
    from npu_studio.core.npu.program.npu_ir import NpuProgram
    from npu_studio.core.npu.store.workspace_io import json_path

    ws, _, later = gym_ws
    limits = CallLimits(NpuProgram.load(json_path(ws)))
    d = later[0]
    now = [100.0]
    log = tmp_path / "calls.tsv"
    watch = CallWatch(log, limits, clock=lambda: now[0])
    assert watch() is None  # no log yet
    log.write_text(begin_line(0, d) + end_line(0, d, 1, 0.5) + begin_line(1, d)[:3])  # a line still being written
    now[0] += 10 * limits.seconds(d)
    assert watch() is None and watch.last_finished == d and watch.running is None
    with open(log, "a") as f:
        f.write(begin_line(1, d)[3:])
    assert watch() is None  # the call just started
    now[0] += limits.seconds(d) + 1
    assert watch().startswith(f"dispatch #{d} ")
    assert finished(log.read_text()) == [(0, d, 1, 0.5)]
