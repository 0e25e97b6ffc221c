"""The substitute-and-check workflow (core/run/substitute_workflow.py) on the real toolchain, without Qt.

Each test is one workflow over a private copy of the session's compiled example. Truths:
onnxruntime's output of the ONNX model and IREE's runtime output of the two builds on the same
input file, the model's bias initializer, the compiler's own "substituted" note, the bytes of
the workspace's files before the call.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from npu_studio.core.errors import Cancelled
from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.runner import pick_function, run_vmfb
from npu_studio.core.run.substitute_workflow import (CHECK, COMPARE, PLAIN_BUILD, REBUILD, TIME, TimingRequest,
                                                     substitute_and_check)
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.manifest import MANIFEST
from npu_studio.core.workspace.workspace import Workspace

from ..conftest import EXAMPLE
from .onnx_reference import run_onnxruntime

BIAS_ADD = "arith.addf %in, %in_1"  # the last one in the source is the bias add (the conv body adds to %out)


def _edit_bias_add(text: str, new: str) -> str:
    i = text.rfind(BIAS_ADD)
    assert i > 0
    return text[:i] + new + text[i + len(BIAS_ADD):]


def _input_file(ws, tmp_path):
    """A .npy input of the model's shape, not the workflow's own seeded inputs."""
    sig = pick_function(ws.snapshot_path("input"))
    [spec] = sig.inputs
    x = np.random.default_rng(7).standard_normal(spec.shape).astype(spec.numpy_dtype)
    path = tmp_path / "x.npy"
    np.save(path, x)
    return path, x, sig.name


def _build_files(root) -> dict[str, str]:
    """Every file of the workspace but the substitutions' own folder and the manifest, by content."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()
            and p.relative_to(root).parts[0] != sub_records.FOLDER and p.name != MANIFEST}


def test_a_correct_substitution_passes_on_the_runtime_numbers_in_named_steps(fresh_example, tmp_path):
    ws = fresh_example
    [info] = list_executables(ws)
    x_path, x, function = _input_file(ws, tmp_path)
    [reference] = run_onnxruntime(EXAMPLE, [x])
    # the bias add with its operands swapped: the same sum, a different text
    edited = _edit_bias_add(info.source.read_text(), "arith.addf %in_1, %in")
    steps, phases, compiles = [], [], []

    outcome = substitute_and_check(
        ws, info.name, sub_records.SOURCE, edited, input_files=[x_path], tolerance=1e-5,
        timing=TimingRequest(repetitions=1, max_repetitions=1, whole_model=False),
        on_step=steps.append, on_phase=lambda done, running: phases.append(done or running),
        started=compiles.append)

    assert steps == [CHECK, PLAIN_BUILD, REBUILD, COMPARE, TIME]
    assert f"hal.executable `{info.name}` substituted" in outcome.build.stderr  # IREE says it swapped it in
    assert outcome.build.from_phase == "stream" and "stream" not in phases and phases  # followed phase by phase
    assert len(compiles) == 1  # the rebuild; the plain build was the one already there, kept aside
    # IREE's runtime on the two builds, and onnxruntime on the model, with the same input file
    plain_out = run_vmfb(outcome.plain_folder / "module.vmfb", function, [x], parameters=ws.params_path)[0]
    sub_out = run_vmfb(ws.vmfb_path, function, [x], parameters=ws.params_path)[0]
    np.testing.assert_allclose(sub_out, reference, rtol=1e-4, atol=1e-4)
    gate = outcome.gate
    assert gate.passed and gate.inputs == "x.npy"
    [out] = gate.outputs
    assert out.max_abs == pytest.approx(float(np.abs(sub_out.astype(np.float64) - plain_out).max()), rel=1e-9)
    assert out.substituted_vs_onnxruntime == pytest.approx(float(np.abs(sub_out - reference).max()), rel=1e-6)
    assert out.plain_vs_onnxruntime == pytest.approx(float(np.abs(plain_out - reference).max()), rel=1e-6)
    assert outcome.timing is not None and outcome.timing.executable == info.name
    assert outcome.timing.plain.samples_ms and outcome.timing.substituted.samples_ms
    [record] = sub_records.load(Workspace.open(ws.root))  # kept on disk with its verdict
    assert record.applied and record.verdict == gate.verdict()


def test_a_wrong_substitution_fails_by_twice_the_bias(fresh_example, tmp_path):
    ws = fresh_example
    [info] = list_executables(ws)
    x_path, x, _function = _input_file(ws, tmp_path)
    [reference] = run_onnxruntime(EXAMPLE, [x])
    bias = numpy_helper.to_array(next(i for i in onnx.load(str(EXAMPLE)).graph.initializer if i.name == "bias"))
    steps = []

    outcome = substitute_and_check(ws, info.name, sub_records.SOURCE,
                                   _edit_bias_add(info.source.read_text(), "arith.subf %in, %in_1"),
                                   input_files=[x_path], tolerance=1e-5, on_step=steps.append)

    assert steps == [CHECK, PLAIN_BUILD, REBUILD, COMPARE]  # no timing asked for
    assert outcome.timing is None
    gate = outcome.gate
    assert not gate.passed and "FAIL" in gate.format()
    [out] = gate.outputs
    # x + b became x - b: every element moves by twice its channel's bias
    scale = float(np.abs(reference).max()) + 2 * float(np.abs(bias).max())
    assert out.max_abs == pytest.approx(2 * float(np.abs(bias).max()), abs=1e-4 * scale)
    assert out.outside == out.total == reference.size
    assert out.plain_vs_onnxruntime < 1e-4 * scale
    assert out.substituted_vs_onnxruntime == pytest.approx(2 * float(np.abs(bias).max()), abs=1e-4 * scale)
    assert sub_records.find(Workspace.open(ws.root), info.name, sub_records.SOURCE).verdict["passed"] is False


def test_cancel_during_the_rebuild_leaves_the_previous_build(fresh_example):
    ws = fresh_example
    root = ws.root
    [info] = list_executables(ws)
    before_files = _build_files(root)
    before_manifest = json.loads((root / MANIFEST).read_text())
    old_module = hashlib.sha256(ws.vmfb_path.read_bytes()).hexdigest()
    edited = _edit_bias_add(info.source.read_text(), "arith.subf %in, %in_1")
    steps, compiles, stopped_at = [], [], []

    def stop_mid_compile(done, running):
        if done and not stopped_at:  # a phase has finished: iree-compile is running the next one
            stopped_at.append(done)
            compiles[-1].cancel()

    with pytest.raises(Cancelled):
        substitute_and_check(ws, info.name, sub_records.SOURCE, edited, on_step=steps.append,
                             on_phase=stop_mid_compile, started=compiles.append)

    assert stopped_at and steps == [CHECK, PLAIN_BUILD, REBUILD]
    assert _build_files(root) == before_files  # the build, its snapshots and dumps: byte for byte
    after = json.loads((root / MANIFEST).read_text())
    # The only addition: the previous build, kept aside as the plain one (it had no substitution).
    kept = after.pop("plain_build", None)
    before_manifest.pop("plain_build", None)
    assert after == before_manifest
    if kept is not None:
        assert hashlib.sha256((root / kept["vmfb"]).read_bytes()).hexdigest() == old_module
    reopened = Workspace.open(root)
    assert sub_records.load(reopened) == []  # nothing recorded as substituted
    assert subs.current_text(reopened, info.name, sub_records.SOURCE) == edited  # the edit stays, as a draft
    assert not list((root / sub_records.FOLDER).glob(f"{info.name}.source.*.mlir"))  # no half-built version
