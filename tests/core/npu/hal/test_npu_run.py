"""`run --npu` in-process: IREE's runtime runs the NPU variant, the functional simulator computes behind the plugin.

Every test compares the outputs with onnxruntime (computed here) and
counts the plugin's calls against the NPU program's dispatches.
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.compile.params import ParamOptions
from npu_studio.core.npu.hal.npu_run import run_npu
from npu_studio.core.npu.numerics import TileFault
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.npu.npu_models import attention, i8_matmul
from tests.core.npu.numerics import check_models as models
from tests.core.onnx_reference import run_onnxruntime


def _close(ours, ref, rel):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return np.max(np.abs(ours - ref)) <= rel * max(1.0, np.max(np.abs(ref)))


@pytest.fixture(scope="module")
def example_ws(example_workspace, tmp_path_factory):
    dest = tmp_path_factory.mktemp("npu-run") / "ws"
    shutil.copytree(example_workspace.root, dest)
    ws = Workspace.open(dest)
    run_for_workspace(ws)
    return ws


def _npu_sites(program):
    return [d.index for d in program.dispatches if d.legal]


def test_example_runs_through_the_plugin_and_matches_onnxruntime(example_ws, cc):
    report = run_npu(example_ws, seed=3)
    (ort,) = run_onnxruntime(example_ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort, 1e-4)
    assert report.ok, "\n".join(report.summary_lines())
    (call,) = report.calls
    assert report.plugin_calls == 1 and call.index == 0 and call.tiles > 1
    assert call.max_error <= 1e-4 * call.scale


def test_corrupted_tile_is_caught_with_its_dispatch(example_ws, cc):
    report = run_npu(example_ws, seed=3, fault=TileFault(dispatch=0, tile=5, delta=0.5))
    assert not report.ok
    assert report.first_divergent is not None and report.first_divergent.index == 0
    assert report.first_divergent.max_error == pytest.approx(0.5, rel=1e-3)
    assert not report.vs_onnxruntime.ok and not report.vs_cpu.ok
    assert "first divergent dispatch: #0" in "\n".join(report.summary_lines())


def test_variant_is_reused_then_rebuilt_when_the_target_changes(example_ws, cc):
    from npu_studio.core.npu.hal.variant import build_variant

    build_variant(example_ws)  # built here, or by an earlier test on this worker
    assert build_variant(example_ws).reused
    before = (example_ws.root / "npu/hal/variant.json").read_text()
    run_for_workspace(example_ws, "tiny")
    rebuilt = build_variant(example_ws)
    assert not rebuilt.reused and (example_ws.root / "npu/hal/variant.json").read_text() != before
    run_for_workspace(example_ws)


def _sin_matmul_softmax(path):
    """Sin (math.sin is no vector function of the default target: CPU) -> MatMul -> Softmax (NPU)."""
    w1 = np.random.default_rng(7).uniform(-0.5, 0.5, (64, 128)).astype(np.float32)
    nodes = [helper.make_node("Sin", ["x"], ["s"], name="sin"),
             helper.make_node("MatMul", ["s", "W1"], ["h"], name="mm1"),
             helper.make_node("Softmax", ["h"], ["out"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [8, 128])],
                          [numpy_helper.from_array(w1, "W1")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


def test_mixed_model_runs_npu_and_cpu_dispatches(tmp_path, cc):
    ws = compile_model(_sin_matmul_softmax(tmp_path / "mixed.onnx"), tmp_path / "ws",
                       params=ParamOptions(threshold_bytes=4096))  # W1 (32 KiB) read from the archive
    program = run_for_workspace(ws)
    assert [d.legal for d in program.dispatches] == [False, True, True]
    report = run_npu(ws, seed=1)
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort, 1e-4)
    assert report.ok, "\n".join(report.summary_lines())
    npu = sorted(d for r in report.variant.imports for d in r.dispatches)
    assert npu == _npu_sites(program) == [1, 2]
    assert [r["dispatch"] for r in report.variant.cpu] == [0]
    assert report.plugin_calls == len(npu) == len(report.calls)


def test_attention_block_runs_through_the_plugin(tmp_path, cc):
    model = attention()
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "attn.onnx"))
    ws = compile_model(tmp_path / "attn.onnx", tmp_path / "ws")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=2)
    ort = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort[0], 1e-4)
    assert report.ok, "\n".join(report.summary_lines())
    assert report.plugin_calls == len(report.calls) >= len(_npu_sites(program)) - len(report.variant.cpu) > 0


def test_f16_matmul_within_f16_tolerance(tmp_path, cc):
    ws = compile_model(models.matmul_f16(tmp_path / "mm.onnx"), tmp_path / "ws")
    run_for_workspace(ws)
    report = run_npu(ws, seed=4)
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert report.outputs[0].dtype == np.float16
    assert _close(report.outputs[0], ort, 1e-2)
    assert report.ok and report.plugin_calls == 1, "\n".join(report.summary_lines())


def test_i8_matmul_accumulates_exactly_in_i32(tmp_path, cc):
    model = i8_matmul()
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "mmi.onnx"))
    ws = compile_model(tmp_path / "mmi.onnx", tmp_path / "ws")
    run_for_workspace(ws)
    report = run_npu(ws, seed=5)
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert report.outputs[0].dtype == np.int32
    np.testing.assert_array_equal(report.outputs[0], ort)
    assert report.ok and report.plugin_calls == 1, "\n".join(report.summary_lines())


@pytest.mark.slow
def test_resnet50_every_npu_dispatch_through_the_plugin(tmp_path, cc):
    from tests.zoo_cache import zoo_workspace

    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    program = run_for_workspace(ws)
    report = run_npu(ws, seed=0, onnxruntime=False)
    (ort,) = run_onnxruntime(ws.source_path, report.inputs)
    assert _close(report.outputs[0], ort, 1e-4)
    assert report.ok, "\n".join(report.summary_lines())
    assert sorted(d for r in report.variant.imports for d in r.dispatches) == _npu_sites(program)
    assert not report.variant.cpu and report.plugin_calls == len(report.calls) == len(program.dispatches)
    # the light zoo's output is nearly flat: every call against IREE on far-from-constant intermediates
    assert all(c.max_error <= 1e-4 * max(1.0, c.scale) for c in report.calls)
    assert max(c.scale for c in report.calls) > 1e6
