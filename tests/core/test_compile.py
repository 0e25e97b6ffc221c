"""The real compiler, phase by phase: snapshots, times, numerics, resume, cancel."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from npu_studio.cli_commands.run import run_workspace
from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.errors import Cancelled, CompileFailed
from npu_studio.core.ir.mlir_text import ParsedSnapshot
from npu_studio.core.workspace.manifest import EDITED
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.zoo_cache import zoo_workspace

from ..conftest import EXAMPLE, light_zoo_models
from .onnx_reference import run_onnxruntime


def test_every_phase_has_a_snapshot_a_time_and_a_size(example_workspace):
    ws = example_workspace
    assert list(ws.snapshots()) == list(SNAPSHOT_PHASES)
    for phase, rec in ws.manifest.phases.items():
        path = ws.root / rec.file
        assert path.stat().st_size == rec.size_bytes > 0
        assert rec.seconds is not None and rec.seconds >= 0
    # Phase times account for the whole compile except writing the vmfb.
    total_phases = sum(r.seconds for r in ws.manifest.phases.values())
    assert 0 < total_phases <= ws.manifest.total_seconds
    assert ws.vmfb_path.stat().st_size > 0
    cmd = ws.manifest.command
    assert any(a.startswith("--mlir-pass-pipeline-crash-reproducer=") for a in cmd)
    assert "--mlir-print-debuginfo" in cmd


def test_snapshots_keep_onnx_node_names(example_workspace):
    flow = example_workspace.snapshot_path("flow").read_text()
    assert 'loc("Conv_0")' in flow
    assert "flow.dispatch @" in flow


def test_example_matches_onnxruntime(example_workspace):
    sig, inputs, outputs = run_workspace(example_workspace, None, seed=3)
    assert sig.name == "SingleConv"
    assert outputs[0].shape == (1, 8, 498, 498)
    (expected,) = run_onnxruntime(EXAMPLE, inputs)
    np.testing.assert_allclose(outputs[0], expected, atol=1e-4, rtol=0)


_BIAS = re.compile(r"dense<\[([^\]]+)\]> : tensor<8xf32>")


def test_editing_the_bias_in_flow_and_resuming_shifts_the_output(fresh_example):
    ws = fresh_example
    _, inputs, (before,) = run_workspace(ws, None, seed=1)
    flow_text = ws.snapshot_path("flow").read_text()
    match = _BIAS.search(flow_text)
    assert match, "the example's flow snapshot should hold the bias as a dense constant"
    bias = np.array([float(v) for v in match.group(1).split(",")], dtype=np.float32)
    delta = np.arange(1, 9, dtype=np.float32) * 0.25
    new_bias = ", ".join(repr(float(v)) for v in bias + delta)
    edited = flow_text[: match.start(1)] + new_bias + flow_text[match.end(1):]

    untouched = {p: ws.snapshot_path(p).read_text() for p in SNAPSHOT_PHASES[: SNAPSHOT_PHASES.index("flow")]}
    stream_before = ws.snapshot_path("stream").read_text()
    ws.resume("flow", edited)

    assert ws.manifest.phases["flow"].state == EDITED
    assert ws.snapshot_path("flow").read_text() == edited
    assert all(ws.snapshot_path(p).read_text() == t for p, t in untouched.items())
    assert ws.snapshot_path("stream").read_text() != stream_before
    assert all(ws.manifest.phases[p].state == "done" for p in SNAPSHOT_PHASES[SNAPSHOT_PHASES.index("flow") + 1:])
    assert (ws.root / ws.manifest.edits[-1]["file"]).read_text() == edited

    _, _, (after,) = run_workspace(ws, inputs)
    np.testing.assert_allclose(after - before, np.broadcast_to(delta.reshape(1, 8, 1, 1), before.shape), atol=1e-5)


def test_reopening_a_workspace_restores_it_without_compiling(example_workspace, monkeypatch):
    import npu_studio.core.compile.compiler as compiler

    monkeypatch.setattr(compiler.subprocess, "Popen", None)  # any compile would now fail
    ws = Workspace.open(example_workspace.root)
    assert ws.manifest == example_workspace.manifest
    assert list(ws.snapshots()) == list(SNAPSHOT_PHASES)


def _compiler_processes_under(folder: Path) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "iree-compile" in cmdline and str(folder) in cmdline:
            pids.append(int(entry))
    return pids


def test_cancel_leaves_no_process_and_no_build(tmp_path):
    model = next(m for m in light_zoo_models() if "resnet50" in m.name)
    ws = Workspace.create(model, tmp_path / "ws")
    started = threading.Event()
    reported: list[str] = []
    job = ws.compile_job(on_progress=lambda done, running: (reported.append(done), started.set()) if done else None)
    errors = []
    thread = threading.Thread(target=lambda: errors.append(_capture(job.run)))
    thread.start()
    assert started.wait(120), "no phase finished within two minutes"
    assert _compiler_processes_under(ws.root), "the compiler should be running now"
    job.cancel()
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(errors[0], Cancelled)
    assert _compiler_processes_under(ws.root) == []
    assert not (ws.root / "module.vmfb").exists()
    # The phases that had finished are kept, complete; nothing else is.
    kept = errors[0].finished
    assert [t.phase for t in kept] == reported and len(kept) >= 1
    assert sorted(p.name for p in (ws.root / "phases").iterdir()) == sorted(t.path.name for t in kept)
    for t in kept:  # whole modules: MLIR's parser reads them
        assert t.path.stat().st_size == t.size_bytes
        ParsedSnapshot(t.path.read_text(), t.path)
    assert not list(ws.root.glob(".staging-*"))
    assert Workspace.open(ws.root).manifest.vmfb is None


def _capture(fn):
    try:
        fn()
    except Exception as exc:  # handed back to the test thread
        return exc
    return None


def test_failed_compile_gives_a_one_line_reason_and_keeps_no_output(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.addf %a, %a : tensor<8xf32>\n  return %0 : tensor<4xf32>\n}\n")
    ws = Workspace.create(bad, tmp_path / "ws")
    with pytest.raises(CompileFailed) as info:
        ws.compile()
    assert str(info.value).startswith(str(bad))
    assert "error:" in str(info.value) and "\n" not in str(info.value)
    assert "error" in info.value.log
    assert not (ws.root / "module.vmfb").exists()


def test_vmvx_target(tmp_path):
    ws = compile_model(EXAMPLE, tmp_path / "ws", target="vmvx")
    assert ws.manifest.target == "vmvx"
    assert "--iree-hal-local-target-device-backends=vmvx" in ws.manifest.command


def _zoo_params():
    params = []
    for m in light_zoo_models():
        marks = [] if "resnet50" in m.name else [pytest.mark.slow]
        params.append(pytest.param(m, id=m.stem, marks=marks))
    return params


@pytest.mark.parametrize("model", _zoo_params())
def test_light_zoo_model_imports_and_compiles(model):
    ws = zoo_workspace(model.stem.removeprefix("light_"))  # compiled once for every zoo test
    assert list(ws.snapshots()) == list(SNAPSHOT_PHASES)
    assert "flow.dispatch @" in ws.snapshot_path("flow").read_text()
    assert ws.vmfb_path.stat().st_size > 0
