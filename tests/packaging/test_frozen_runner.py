"""In a frozen bundle `sys.executable` is the npu-studio launcher: the runner's fresh
process must go through it (--run-module), never through `python -m`."""

from __future__ import annotations

import sys

import numpy as np

from npu_studio.cli_commands.run import run_workspace
from npu_studio.core import processes

from ..conftest import EXAMPLE
from ..core.onnx_reference import run_onnxruntime


def test_module_command_outside_a_bundle_is_python_dash_m():
    assert processes.module_command("npu_studio.core.run.run_vmfb") == [sys.executable, "-m",
                                                                      "npu_studio.core.run.run_vmfb"]


def test_runner_through_a_launcher_without_dash_m(example_workspace, tmp_path, monkeypatch):
    """A stand-in for the bundle's launcher: it only knows `npu-studio ARGS`, and records its calls."""
    calls = tmp_path / "calls.txt"
    launcher = tmp_path / "npu-studio"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n'
                        f'case "$1" in -m) echo "no -m here" >&2; exit 2;; esac\n'
                        f'exec "{sys.executable}" -c "import sys; from npu_studio.cli import main; '
                        f'sys.exit(main())" "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(launcher))
    sig, inputs, outputs = run_workspace(example_workspace, None, seed=5)
    (expected,) = run_onnxruntime(EXAMPLE, inputs)
    np.testing.assert_allclose(outputs[0], expected, atol=1e-4, rtol=0)
    assert calls.read_text().startswith(f"{processes.RUN_MODULE_FLAG} npu_studio.core.run.run_vmfb ")


def test_run_module_refuses_modules_outside_the_package(capsys):
    from npu_studio.cli import main

    assert main([processes.RUN_MODULE_FLAG, "os"]) == 2
    assert capsys.readouterr().err.strip() == "npu-studio: error: --run-module takes a module of npu_studio"
