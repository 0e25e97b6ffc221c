"""A kill -9 of `npu-studio substitute` while its numeric check runs leaves the previous PASS in force.

The workflow publishes a rebuild only together with its verdict (core/run/substitute_workflow.py):
the comparison runs on the staged build. Here a correct substitution passes first; then a
numerically wrong edit of the same executable is substituted by the CLI in a child process that
is killed with SIGKILL when the comparison starts ($NPU_STUDIO_FAULT, core/processes.fault_point).
Truths: onnxruntime's output of the ONNX model, the bytes of the module before the kill, and the
records `substitute --list --json` prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys

import numpy as np

from npu_studio.cli import main
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.runner import pick_function, run_vmfb
from npu_studio.core.run.substitute_workflow import substitute_and_check
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace

from ..conftest import EXAMPLE, REPO
from .onnx_reference import run_onnxruntime

BIAS_ADD = "arith.addf %in, %in_1"


def _edit_bias_add(text: str, new: str) -> str:
    i = text.rfind(BIAS_ADD)
    assert i > 0
    return text[:i] + new + text[i + len(BIAS_ADD):]


def test_kill_during_the_check_keeps_the_previous_passed_substitution(fresh_example, tmp_path, capsys):
    ws = fresh_example
    [info] = list_executables(ws)
    sig = pick_function(ws.snapshot_path("input"))
    x = np.random.default_rng(3).standard_normal(sig.inputs[0].shape).astype(sig.inputs[0].numpy_dtype)
    x_path = tmp_path / "x.npy"
    np.save(x_path, x)
    [reference] = run_onnxruntime(EXAMPLE, [x])
    source = info.source.read_text()
    good = substitute_and_check(ws, info.name, sub_records.SOURCE, _edit_bias_add(source, "arith.addf %in_1, %in"),
                                input_files=[x_path], tolerance=1e-5)
    assert good.gate.passed
    module_before = hashlib.sha256(ws.vmfb_path.read_bytes()).hexdigest()
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text(_edit_bias_add(source, "arith.subf %in, %in_1"))  # x + b became x - b

    proc = subprocess.run([sys.executable, "-m", "npu_studio", "substitute", str(ws.root), "--executable",
                           info.name, "--source", str(wrong), "--input", str(x_path), "--repetitions", "0"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NPU_STUDIO_FAULT": "substitute-compare"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    assert main(["substitute", str(ws.root), "--list", "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert record["file"].endswith(f"{info.name}.source.1.mlir")
    assert record["enabled"] and record["verdict"]["passed"] is True
    reopened = Workspace.open(ws.root)
    assert hashlib.sha256(reopened.vmfb_path.read_bytes()).hexdigest() == module_before
    [out] = run_vmfb(reopened.vmfb_path, sig.name, [x], parameters=reopened.params_path)
    np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4)  # not x - b

    # and `run` on the workspace (a fresh command after the kill) gives the same numbers
    assert main(["run", str(ws.root), "--input", str(x_path), "--output-dir", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    [saved] = sorted((tmp_path / "run").glob("*.npy"))
    np.testing.assert_allclose(np.load(saved), reference, rtol=1e-4, atol=1e-4)
