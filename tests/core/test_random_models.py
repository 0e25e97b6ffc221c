"""The differential corpus (issue 35, item 6): random valid ONNX models nobody here tuned the tools to.

Truths: onnx's checker (full_check) and onnxruntime for the generator itself; onnxruntime for
IREE's CPU build; IREE's CPU build for the NPU paths (`simulate --check`, `run --npu`, which
compare per dispatch); and for `trace`, the build left alone (no dispatch may depart) or the
one dispatch this test perturbed (`tests/models/fault_edit.py`: the trace must name exactly it,
or say "cannot locate"). `make test` runs a fixed set of seeds and the saved regressions' smallest
model of each failure class; `make fuzz-models` runs hundreds with a fresh seed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings

from tests.models import differential as diff
from tests.models import fault_edit
from tests.models.random_onnx import model_for_seed, onnx_models

REGRESSIONS = Path(__file__).resolve().parents[1] / "models" / "regressions"
# make test runs a fixed set (FIXED_SEEDS through IREE and the NPU paths, TRACE_SEEDS through trace
# with TRACE_FAULTS perturbed dispatches, the FAST_REGRESSIONS saved models covering the most failure
# classes); the rest carries the `corpus` mark, which make test leaves out and make fuzz-models runs.
FIXED_SEEDS = list(range(6))
CORPUS_SEEDS = list(range(6, 24))
TRACE_SEEDS = [0, 1, 4]
CORPUS_TRACE_SEEDS = [7, 11, 20]
FAST_REGRESSIONS = 4
TRACE_FAULTS = 2  # float-result dispatches perturbed per model in make test (make fuzz-models: all)
CORPUS = pytest.mark.corpus


# -- the generator ---------------------------------------------------------------------------------

def _run_onnxruntime(model: onnx.ModelProto, seed: int = 0) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    [y] = sess.run(None, {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)})
    return y


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(onnx_models())
def test_every_generated_model_is_valid_and_runs_in_onnxruntime(model):
    assert model.ir_version == 10 and model.opset_import[0].version == 17
    onnx.checker.check_model(model, full_check=True)
    y = _run_onnxruntime(model)
    declared = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert list(y.shape) == declared and y.dtype == np.float32
    assert np.isfinite(y).all()


def test_seeded_models_are_reproducible_and_cover_every_op_family():
    first = [model_for_seed(s) for s in range(300)]
    assert first[5].SerializeToString() == model_for_seed(5).SerializeToString()
    seen = {n.op_type for m in first for n in m.graph.node}
    seen |= {n.op_type + "@group" for m in first for n in m.graph.node
             if n.op_type == "Conv" and any(a.name == "group" and a.i > 1 for a in n.attribute)}
    seen |= {"perchannel" for m in first for n in m.graph.node
             if n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)}
    seen |= {"f16" for m in first if _computes_in_f16(m)}
    wanted = {"Conv", "Conv@group", "MatMul", "Add", "Mul", "Relu", "Clip", "Erf", "Softmax", "LayerNormalization",
              "BatchNormalization", "Pad", "MaxPool", "AveragePool", "GlobalAveragePool", "Transpose", "Reshape",
              "Slice", "Gather", "Concat", "Resize", "QuantizeLinear", "DequantizeLinear", "perchannel", "Cast", "f16"}
    assert wanted <= seen, wanted - seen
    for m in first[:60]:  # each passes the strict checker and onnxruntime runs it
        onnx.checker.check_model(m, full_check=True)
        assert np.isfinite(_run_onnxruntime(m)).all()


def test_fault_edit_gives_a_shared_executable_its_own_copy():
    flow = "\n".join([
        "module {",
        "  flow.executable private @e {",
        "        iree_tensor_ext.dispatch.tensor.store %3, %arg1, offsets = [0], sizes = [4], strides = [1] "
        ": tensor<4xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>",
        "  }",
        "  util.func public @main() {",
        "    %a = flow.dispatch @e::@e_0(%x) : (tensor<4xf32>) -> tensor<4xf32>",
        "    %b = flow.dispatch @e::@e_0(%a) : (tensor<4xf32>) -> tensor<4xf32>",
        "  }",
        "}"])
    edited = fault_edit.perturb(flow, 1)
    assert fault_edit.sites(edited) == [("e", "e_0"), ("e_fault", "e_0_fault")]
    assert edited.count("linalg.generic") == 1 and "flow.executable private @e_fault {" in edited
    assert fault_edit.float_result_sites(flow) == [0, 1]


# -- the differential checks ---------------------------------------------------------------------

_COMPILED: dict[str, diff.Compiled] = {}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile a model once per test process, whichever test asks first."""
    def get(model: onnx.ModelProto) -> diff.Compiled:
        key = hashlib.sha256(model.SerializeToString()).hexdigest()[:16]
        if key not in _COMPILED:
            work = tmp_path_factory.mktemp(f"model-{key}")
            onnx.save(model, str(work / "model.onnx"))
            _COMPILED[key] = diff.compile_model(work / "model.onnx", work)
        c = _COMPILED[key]
        assert c.report.checks[0].outcome in ("pass", "iree"), c.report.checks[0]
        if not c.ok:  # IREE's own failure, reported by the CLI as one line: not ours to check further
            pytest.skip(f"IREE cannot compile this model: {c.report.checks[0].detail[:200]}")
        return c
    return get


def _assert_pass(checks: list[diff.Check]):
    """No check failed on our side (an outcome "iree" is IREE's own failure, reported cleanly)."""
    bad = [c for c in checks if c.outcome == "fail"]
    assert not bad, "\n".join(f"{c.name}: {c.failure}: {c.detail}" for c in bad)


def _computes_in_f16(model: onnx.ModelProto) -> bool:
    return any(n.op_type == "Cast" and n.attribute[0].i == onnx.TensorProto.FLOAT16 for n in model.graph.node)


def _seeds(fixed, corpus):
    return [pytest.param(s, id=f"seed{s}") for s in fixed] + \
        [pytest.param(s, marks=[CORPUS], id=f"seed{s}") for s in corpus]


@pytest.mark.parametrize("seed", _seeds(FIXED_SEEDS, CORPUS_SEEDS))
def test_cpu_build_matches_onnxruntime(seed, compiled):
    [check] = diff.cpu_checks(compiled(model_for_seed(seed)))
    # on these fixed seeds IREE agrees with onnxruntime (make fuzz-models records a departure as IREE's)
    assert check.outcome == "pass", f"{check.failure}: {check.detail}"


@pytest.mark.parametrize("seed", _seeds(FIXED_SEEDS, CORPUS_SEEDS))
def test_npu_paths_match_iree(seed, compiled):
    _assert_pass(diff.npu_checks(compiled(model_for_seed(seed))))


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds(TRACE_SEEDS, CORPUS_TRACE_SEEDS))
def test_trace_names_no_dispatch_on_clean_builds_and_the_perturbed_one_on_faulty(seed, compiled):
    _assert_pass(diff.trace_checks(compiled(model_for_seed(seed)), TRACE_FAULTS))


# -- every model that ever failed --------------------------------------------------------------------

def _regressions() -> list:
    """Every saved model: at most FAST_REGRESSIONS small ones chosen to cover the most failure classes
    (greedily) in make test, the rest marked `corpus`."""
    notes = sorted(REGRESSIONS.glob("*.json"))
    classes = {n: {f["class"] for f in json.loads(n.read_text())["failures"]} for n in notes}
    notes_fast = [n for n in notes if not any("timeout" in c for c in classes[n])]
    size = {n: len(onnx.load(str(n.with_suffix(".onnx"))).graph.node) for n in notes}
    chosen, covered = [], set()
    for _ in range(FAST_REGRESSIONS):
        best = max(notes_fast, key=lambda n: (len(classes[n] - covered), -size[n]), default=None)
        if best is None or not classes[best] - covered:
            break
        chosen.append(best)
        covered |= classes[best]
    return [pytest.param(n, id=n.stem, marks=[] if n in chosen else [CORPUS]) for n in notes]


def _regression_model(note: Path) -> onnx.ModelProto:
    return onnx.load(str(note.with_suffix(".onnx")))


@pytest.mark.parametrize("note", _regressions())
def test_regression_cpu_and_npu(note, compiled):
    model = _regression_model(note)
    c = compiled(model)
    _assert_pass(diff.cpu_checks(c) + diff.npu_checks(c))


@pytest.mark.slow
@pytest.mark.parametrize("note", _regressions())
def test_regression_trace(note, compiled):
    _assert_pass(diff.trace_checks(compiled(_regression_model(note)), TRACE_FAULTS))


def test_fault_edit_moves_the_dispatch_result_by_the_stated_amount(compiled):
    # seed 7 is one Mul: one dispatch, whose result is the model's output, so the build's output
    # shows exactly what the perturbed dispatch stored: y + 0.5 + 0.25 y^2 for IREE's own y
    c = compiled(model_for_seed(7))
    flow = next((c.ws / "phases").glob("*.flow.mlir")).read_text()
    assert fault_edit.float_result_sites(flow) == [0]
    clean = diff.cli("run", str(c.ws), "--input", str(c.x), "--output-dir", str(c.work / "clean"))
    assert clean.returncode == 0, clean.stderr
    edited = c.work / "edited.flow.mlir"
    edited.write_text(fault_edit.perturb(flow, 0))
    copy = c.work / "perturbed"
    shutil.copytree(c.ws, copy)
    assert diff.cli("resume", str(edited), "--from", "flow", "--workspace", str(copy)).returncode == 0
    assert diff.cli("run", str(copy), "--input", str(c.x), "--output-dir", str(c.work / "bad")).returncode == 0
    y, z = (np.load(c.work / d / "output0.npy").astype(np.float64) for d in ("clean", "bad"))
    np.testing.assert_allclose(z, y + 0.5 + 0.25 * y * y, rtol=1e-6, atol=1e-6)
