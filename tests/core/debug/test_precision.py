"""`precision`: demoted builds (variants) traced against onnxruntime and the f32 build.

Truths: onnxruntime and the f32 build's own run (by the test), the model's
weights (where f16's range of 65504 is first exceeded, worked out with
numpy in the test), the variant's own snapshots (its types are demoted).
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from npu_studio.cli import main as cli_main
from npu_studio.core.debug.precision import precision
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.onnx_reference import run_onnxruntime

from . import trace_models as models

F16_MAX = 65504.0


def _digest(root) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())).hexdigest()


def test_mlp_in_f16_is_within_f16_tolerance(tmp_path):
    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    x = random_inputs(pick_function(ws.snapshot_path("input")), 1)
    # IREE 3.13 runs an f16 module only with a sync entry point (test_precision_iree: the async one fails)
    report = precision(ws, ["f16"], x)
    [r] = report.results
    assert r.ok and r.ran and r.trace.first_divergent is None, "\n".join(report.summary_lines())
    assert "f16" in variants.resolve(ws, r.variant).snapshot_path("flow").read_text()
    [ours] = r.trace.values
    assert ours.dtype == np.float16  # the demoted build computed in f16
    [ref] = run_onnxruntime(ws.source_path, x)
    [f32] = run_vmfb(ws.vmfb_path, "mlp_bias", x)
    err = np.abs(ours.astype(np.float64) - ref).max()
    assert 0 < err <= 1e-2 * max(1.0, np.abs(ref).max())
    assert r.vs_f32[0].max_abs_error == pytest.approx(np.abs(ours.astype(np.float64) - f32).max())


def _first_overflowing_tensor(model_path, x) -> str:
    """Walk the MLP in numpy (float64) and name the first tensor past f16's range."""
    m = onnx.load(str(model_path))
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    env = {"x": x.astype(np.float64)}
    for node in m.graph.node:
        a = [env.get(i, w.get(i)) for i in node.input]
        if node.op_type == "MatMul":
            out = a[0] @ a[1]
        elif node.op_type == "Add":
            out = a[0] + a[1]
        else:
            assert node.op_type == "Relu"
            out = np.maximum(a[0], 0)
        env[node.output[0]] = out
        if np.abs(out).max() > F16_MAX:
            return node.output[0]
    raise AssertionError("the model does not overflow f16")


def test_f16_overflow_names_the_first_dispatch_that_overflows(tmp_path):
    model = models.overflowing_mlp(tmp_path / "big.onnx")
    ws = compile_model(model, tmp_path / "ws")
    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)
    report = precision(ws, ["f16"], x)
    [r] = report.results
    first = r.trace.first_divergent
    assert first is not None and not r.ok
    # the matmul result m1 overflows; the dispatch computing it (fused with its add and relu) is named
    overflowing = _first_overflowing_tensor(model, x[0])
    assert overflowing == "m1"
    assert first.onnx_node in ("mm1", "add1", "relu1")
    assert not any(d.departs for d in r.trace.dispatches if d.index < first.index)
    assert first.max_abs_error == float("inf") or first.max_abs_error > F16_MAX
    assert "first dispatch that departs: #" in "\n".join(report.summary_lines())


def test_bad_flag_and_bad_input_leave_the_workspace_unchanged(tmp_path, capsys):
    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    before = _digest(ws.root)
    assert cli_main(["precision", str(ws.root), "--demote", "f16", "--flag=--iree-no-such-flag"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--iree-no-such-flag" in err
    bad = tmp_path / "x.npy"
    np.save(bad, np.zeros((2, 2), np.float32))
    assert cli_main(["precision", str(ws.root), "--demote", "f16", "--input", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err
    assert _digest(ws.root) == before


def test_cli_plans_each_build_on_the_npu(tmp_path, capsys):
    import json

    from npu_studio.core.ir.dispatch_index import index_file

    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    assert cli_main(["precision", str(ws.root), "--demote", "f16", "--npu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "npu-studio.precision" and data["ok"]
    ws = Workspace.open(ws.root)  # the command added the variant
    f16 = variants.resolve(ws, "demote-f16").snapshot_path("flow")
    assert data["npu"]["f32"]["dispatches"] == len(index_file(ws.snapshot_path("flow"), "flow").dispatches)
    assert data["npu"]["f16"]["dispatches"] == len(index_file(f16, "flow").dispatches)
    assert data["npu"]["f16"]["cycles"] > 0
