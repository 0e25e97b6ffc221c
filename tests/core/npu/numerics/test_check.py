"""`check` on compiled models: outputs against onnxruntime (computed here) and IREE, per-dispatch errors."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from npu_studio.core.compile.params import ParamOptions
from npu_studio.core.npu.numerics import TileFault, check
from npu_studio.core.npu.numerics.functional_sim import FunctionalSim
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.run.dispatches.iree_dispatches import (
    CACHE_DIR,
    DispatchRunner,
    build,
)
from npu_studio.core.run.runner import pick_function
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.onnx_reference import run_onnxruntime

from . import check_models as models


def _close(ours, ref, rel):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return np.max(np.abs(ours - ref)) <= rel * max(1.0, np.max(np.abs(ref)))


@pytest.fixture(scope="module")
def example_ws(example_workspace, tmp_path_factory):
    """A copy of the session's example workspace (check caches its dispatch build inside)."""
    dest = tmp_path_factory.mktemp("check") / "ws"
    shutil.copytree(example_workspace.root, dest)
    return Workspace.open(dest)


@pytest.fixture(scope="module")
def mlp_ws(tmp_path_factory):
    """Two matmuls (weights in params.irpa) and a softmax that falls back to the CPU."""
    d = tmp_path_factory.mktemp("mlp")
    return compile_model(models.mlp_softmax(d / "mlp.onnx"), d / "ws", params=ParamOptions(threshold_bytes=4096))


def test_example_matches_onnxruntime_tile_by_tile(example_ws):
    program = run_npu_pipeline(example_ws.snapshot_path("flow"))
    report = check(example_ws, program, seed=3)
    ort = run_onnxruntime(example_ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort[0], 1e-4)
    assert report.ok and report.first_divergent is None
    (d,) = report.dispatches
    assert d.computed_by == "npu" and d.tiles == program.dispatches[0].num_tiles > 1
    assert d.max_error <= 1e-4 * d.scale
    assert report.vs_onnxruntime.ok and report.vs_iree.ok


def test_corrupted_tile_names_its_dispatch(example_ws):
    program = run_npu_pipeline(example_ws.snapshot_path("flow"))
    report = check(example_ws, program, fault=TileFault(dispatch=0, tile=5, delta=0.5))
    assert not report.ok
    assert report.first_divergent is not None and report.first_divergent.index == 0
    assert report.first_divergent.max_error == pytest.approx(0.5, rel=1e-3)
    assert "first divergent dispatch: #0" in "\n".join(report.summary_lines())


def test_parameterized_model_with_cpu_fallback(mlp_ws, tiny_f32_target):
    assert mlp_ws.params_path is not None and mlp_ws.params_path.is_file()
    assert '#stream.parameter.named<"model"::"W1">' in mlp_ws.snapshot_path("flow").read_text()
    # the tiny target's 64 KiB SRAM splits the matmuls into tiles, reduction loops too
    program = run_npu_pipeline(mlp_ws.snapshot_path("flow"), tiny_f32_target)
    report = check(mlp_ws, program, seed=1)
    ort = run_onnxruntime(mlp_ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort[0], 1e-4)
    assert report.ok
    by = [d.computed_by for d in report.dispatches]
    assert by == ["npu", "npu", "iree-cpu"]  # the softmax has no indexing maps: CPU fallback
    assert sum(d.tiles for d in report.dispatches) == len(program.tasks) - 1

    # the interpreter knows linalg.softmax too, should the NPU ever take it
    flow = mlp_ws.snapshot_path("flow")
    with DispatchRunner(build(flow, mlp_ws.root / CACHE_DIR, root=mlp_ws.root)) as runner:
        sim = FunctionalSim(flow, program, mlp_ws.params_path, runner, interpret_fallbacks=True)
        result = sim.run(report.function, report.inputs)
    assert result.dispatches[2].computed_by == "interpreter"
    assert _close(result.outputs[0], ort[0], 1e-4)

    # a wrong tile in the second matmul: that dispatch is named, not the first one or the softmax
    bad = check(mlp_ws, program, report.inputs, fault=TileFault(dispatch=1, tile=1, delta=0.25))
    assert bad.first_divergent.index == 1
    assert not bad.ok


def test_f16_matmul_within_f16_tolerance(tmp_path):
    ws = compile_model(models.matmul_f16(tmp_path / "mm16.onnx"), tmp_path / "ws")
    flow = ws.snapshot_path("flow")
    program = run_npu_pipeline(flow)
    report = check(ws, program, seed=2)
    ort = run_onnxruntime(ws.source_path, report.inputs)
    assert report.outputs[0].dtype == np.float16
    assert _close(report.outputs[0], ort[0], 1e-2)
    assert report.ok
    # Whether or not the NPU takes it today, the interpreter computes the f16 dispatch itself too.
    sig = pick_function(ws.snapshot_path("input"))
    with DispatchRunner(build(flow, ws.root / CACHE_DIR, root=ws.root)) as runner:
        result = FunctionalSim(flow, program, ws.params_path, runner, interpret_fallbacks=True).run(
            sig.name, report.inputs)
    assert all(d.computed_by in ("npu", "interpreter") for d in result.dispatches)
    assert _close(result.outputs[0], ort[0], 1e-2)
    # ... and tile by tile, the reduction split in four, the f32->f16 epilogue on each finished tile
    from iree.compiler import ir

    from npu_studio.core.ir.flow_graph import FlowGraph
    from npu_studio.core.npu.numerics.dispatch_eval import DispatchInterpreter, Tile
    from npu_studio.core.npu.plan.tiling import Loop, enumerate_tiles

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    graph = FlowGraph(ir.Module.parse(flow.read_text(), ctx).operation)
    loops = (Loop("M", 128), Loop("N", 128), Loop("K", 64, reduction=True))
    tiles = [Tile(o, s) for o, s in enumerate_tiles(loops, (32, 64, 16), (1, 0, 2))]
    out = np.zeros((128, 128), np.float16)
    with ctx:
        DispatchInterpreter(graph.func_of(graph.sites[0]), tiles).run([*report.inputs, out])
    assert _close(out, ort[0], 1e-2)
