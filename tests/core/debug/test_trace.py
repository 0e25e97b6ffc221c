"""`trace`: every dispatch of a build against the ONNX model, and the first divergent one.

Truths: the dispatch index (how many dispatches have a compute op and ONNX
provenance: the lower bound on pairing), the edit or substitution the test
makes itself (which dispatch it breaks), the model's own bias initializer
(how far `addf` -> `subf` moves a result), and onnxruntime run by the test.
"""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from npu_studio.cli import main as cli_main
from npu_studio.core.debug.numerics_trace import trace
from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.core.onnx_reference import run_onnxruntime
from tests.zoo_cache import zoo_workspace

from . import trace_models as models

EDITED = 1  # the dispatch the edit and the substitution break (of three)


def _pairable(ws) -> int:
    """Dispatches with a compute op whose locations name ONNX nodes: the ones a trace must pair."""
    return sum(1 for r in index_file(ws.snapshot_path("flow"), "flow").dispatches if r.root is not None and r.onnx_nodes)


def _tree_digest(root) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def mlp_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlp_bias")
    return compile_model(models.mlp_bias(d / "mlp_bias.onnx"), d / "ws")


@pytest.fixture
def mlp_ws(mlp_build, tmp_path):
    shutil.copytree(mlp_build.root, tmp_path / "ws")
    return Workspace.open(tmp_path / "ws")


def _bias(ws, i: int) -> np.ndarray:
    model = onnx.load(str(ws.source_path))
    return numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == f"b{i}"))


def _assert_unedited(report, ws):
    assert report.first_divergent is None and report.ok, "\n".join(report.summary_lines())
    bound = _pairable(ws)
    assert bound >= len(report.dispatches) / 2
    assert report.paired >= bound
    assert not any(d.departs for d in report.dispatches)


def test_example_pairs_its_dispatch_and_agrees(example_workspace, tmp_path):
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    report = trace(ws, seed=2)
    _assert_unedited(report, ws)
    [d] = report.dispatches
    assert d.onnx_tensor == onnx.load(str(ws.source_path)).graph.output[0].name


def test_attention_block_pairs_every_compute_dispatch(tmp_path):
    ws = compile_model(models.attention(tmp_path / "attention.onnx"), tmp_path / "ws")
    report = trace(ws)
    _assert_unedited(report, ws)
    # a deduplicated executable (q, k, v projections share one) is still paired per site
    by_tensor = {d.onnx_tensor for d in report.dispatches}
    assert {"q", "k", "v", "p", "y"} <= by_tensor


@pytest.mark.slow
def test_resnet50_pairs_most_dispatches_and_none_departs(tmp_path):
    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    report = trace(ws)
    _assert_unedited(report, ws)
    assert max(d.scale for d in report.dispatches if d.paired) > 1e6  # far from trivial values


def test_unedited_mlp_agrees_with_onnxruntime(mlp_ws):
    sig = pick_function(mlp_ws.snapshot_path("input"))
    x = random_inputs(sig, 4)
    report = trace(mlp_ws, x)
    _assert_unedited(report, mlp_ws)
    assert [d.onnx_tensor for d in report.dispatches] == ["h0", "h1", "a2"]
    for d in report.dispatches:  # every element of each 4x32 result is in its histogram
        assert sum(d.histogram["counts"]) == 4 * 32 and d.shape == [4, 32]
    [ref] = run_onnxruntime(mlp_ws.source_path, x)
    assert report.outputs[0].scale == pytest.approx(float(np.abs(ref).max()))


def _check_names_the_edited_dispatch(report, ws):
    first = report.first_divergent
    assert first is not None and first.index == EDITED, "\n".join(report.summary_lines())
    assert [d.departs for d in report.dispatches] == [False, True, True]
    assert first.inputs_agree is True and report.dispatches[0].paired
    assert report.dispatches[2].inputs_agree is False
    # relu(m - b) against relu(m + b): elementwise within [0, 2b], and not zero
    b = _bias(ws, EDITED)
    assert 0 < first.max_abs_error <= 2 * float(b.max()) + 1e-5
    assert first.outside > 0 and first.first_differing
    assert f"first divergent dispatch: #{EDITED}" in "\n".join(report.summary_lines())


def test_flow_edit_in_one_dispatch_is_named_first(mlp_ws):
    ws = mlp_ws
    flow = ws.snapshot_path("flow").read_text()
    rec = index_file(ws.snapshot_path("flow"), "flow").dispatches[EDITED]
    start = flow.index(f"flow.executable private @{rec.executable} ")
    at = flow.index("arith.addf", start)
    assert at < flow.index("flow.executable private", start + 1)  # inside that executable
    ws.resume("flow", flow[:at] + "arith.subf" + flow[at + len("arith.addf"):])
    _check_names_the_edited_dispatch(trace(ws), ws)


@pytest.mark.parametrize("method", ["dispatches", "tensor-trace"])
def test_substitution_in_one_executable_is_named_first(mlp_ws, method):
    # The substituted text carries the workspace build's buffer offsets; the trace
    # fits it to the dispatch module's (or the traced build's) layout.
    ws = mlp_ws
    info = next(e for e in list_executables(ws) if e.dispatches == [EDITED])
    source = info.source.read_text()
    at = source.rfind("arith.addf %in")
    assert at > 0
    subs.substitute(ws, info.name, sub_records.SOURCE, source[:at] + "arith.subf" + source[at + 10:]).run()
    sig = pick_function(ws.snapshot_path("input"))
    x = random_inputs(sig, 6)
    report = trace(ws, x, method=method)
    _check_names_the_edited_dispatch(report, ws)
    assert any(info.name in n and "fitted" in n for n in report.notes)
    # what the trace ran ends where IREE's own substituted build ends
    [built] = run_vmfb(ws.vmfb_path, sig.name, x)
    np.testing.assert_allclose(report.values[0], built, rtol=1e-5, atol=1e-5)
    [ref] = run_onnxruntime(ws.source_path, x)
    [whole] = report.whole_build
    assert whole.max_abs_error == pytest.approx(float(np.abs(built.astype(np.float64) - ref).max()))
    assert not whole.ok and not report.ok


def test_both_methods_agree_on_an_unedited_build(mlp_ws):
    by_module = trace(mlp_ws, seed=5, method="dispatches")
    by_tracing = trace(mlp_ws, seed=5, method="tensor-trace")
    assert [d.onnx_tensor for d in by_module.dispatches] == [d.onnx_tensor for d in by_tracing.dispatches]
    assert by_tracing.first_divergent is None and by_tracing.paired == by_module.paired


def test_cli_trace_json_and_bad_input(mlp_ws, tmp_path, capsys):
    import json

    assert cli_main(["trace", str(mlp_ws.root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "npu-studio.trace" and data["first_divergent"] is None
    assert len(data["dispatches"]) == 3

    before = _tree_digest(mlp_ws.root)
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3, 3), np.float32))
    assert cli_main(["trace", str(mlp_ws.root), "--input", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and "shape" in err
    assert cli_main(["trace", str(mlp_ws.root), "--tolerance", "-1"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert _tree_digest(mlp_ws.root) == before


def test_workspace_without_build_is_one_line(tmp_path, capsys):
    ws = Workspace.create(models.mlp_bias(tmp_path / "m.onnx"), tmp_path / "ws")
    before = _tree_digest(ws.root)
    assert cli_main(["trace", str(ws.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "compile first" in err
    assert _tree_digest(ws.root) == before


def test_a_workspace_made_from_mlir_is_one_line(example_workspace, tmp_path, capsys):
    mlir = tmp_path / "single_conv.mlir"
    mlir.write_text(example_workspace.imported_path.read_text())
    ws = compile_model(mlir, tmp_path / "ws")
    before = _tree_digest(ws.root)
    assert cli_main(["trace", str(ws.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "MLIR" in err
    assert _tree_digest(ws.root) == before
