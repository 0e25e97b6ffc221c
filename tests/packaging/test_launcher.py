"""`npu-studio` as the one command: app or headless command, --version, --help, bad input."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import time
import tomllib

import npu_studio.cli_commands
from npu_studio.app_args import COMMANDS

from ..conftest import EXAMPLE, REPO


def launch(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "npu_studio", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_every_command_module_is_registered_and_documented_in_help():
    modules = {m.name.replace("_", "-") for m in pkgutil.iter_modules(npu_studio.cli_commands.__path__)}
    modules.discard("common")
    assert modules == set(COMMANDS)
    proc = launch("--help")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for command in COMMANDS:
        entry = [ln for ln in lines if ln.split()[:1] == [command]]
        assert entry and len(entry[0].split()) > 1, f"{command} has no help line in --help"
    assert "FILE_OR_WORKSPACE" in proc.stdout and "--self-test" in proc.stdout


def test_version_names_npu_studio_compiler_and_runtime():
    from importlib.metadata import version

    from iree.compiler.tools.binaries import find_tool

    proc = launch("--version")
    assert proc.returncode == 0, proc.stderr
    own, compiler, runtime = proc.stdout.splitlines()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert own == f"npu-studio {declared}"
    tool = subprocess.run([find_tool("iree-compile"), "--version"], capture_output=True, text=True).stdout
    assert compiler in [ln.strip() for ln in tool.splitlines()]
    runtime_release = ".".join(version("iree-base-runtime").split(".")[:2])
    assert runtime.startswith(f"IREE runtime version {runtime_release}")


def test_a_mistyped_command_is_one_line_and_exit_2():
    proc = launch("compil", "model.onnx")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"npu-studio: error: 'compil' is neither a command nor a file (commands: {', '.join(COMMANDS)})"]


def test_a_missing_model_is_one_line_naming_it(tmp_path):
    missing = tmp_path / "gone.onnx"
    proc = launch(missing)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"npu-studio: error: {missing}: no such file or directory"]


def test_npu_studio_model_opens_the_app_on_it(tmp_path):
    """`npu-studio resources/examples/single_conv.onnx` opens a window that compiles it."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    ws = tmp_path / "ws"
    proc = subprocess.Popen([sys.executable, "-m", "npu_studio", str(EXAMPLE), "--workspace", str(ws)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (ws / "manifest.json").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, f"the app exited: {proc.communicate()}"
        assert (ws / "manifest.json").exists(), "the window did not compile the model it was given"
        assert (ws / "source" / EXAMPLE.name).read_bytes() == EXAMPLE.read_bytes()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_output_into_a_closed_pipe_stops_quietly(example_workspace):
    # `npu-studio dispatches WS --json | head -c 0`: the reader is gone before the first line is written.
    proc = subprocess.Popen([sys.executable, "-m", "npu_studio", "dispatches", str(example_workspace.root), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err and err == "", err
