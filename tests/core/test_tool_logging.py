"""Every tool we start is logged once, with the command line as given, shell-quoted so that it can
be pasted into a shell; `npu-studio -v` prints those lines on stderr, and nothing without it."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys

import pytest

from npu_studio.core import processes
from npu_studio.core.compile import toolchain

from ..conftest import EXAMPLE

INVOKING = "Invoking "
TINY_MLIR = """func.func @double(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _invocations(caplog) -> list[str]:
    return [r.getMessage()[len(INVOKING):] for r in caplog.records
            if r.name == "npu_studio.core.processes" and r.getMessage().startswith(INVOKING)]


def test_a_real_compile_is_logged_once_and_its_line_splits_back_into_the_arguments(caplog, tmp_path):
    folder = tmp_path / "my $HOME model's dir"  # a space, a $ and a quote: each must survive the quoting
    folder.mkdir()
    (folder / "a b.mlir").write_text(TINY_MLIR)
    out = folder / "out $x.mlir"
    cmd = [str(toolchain.iree_compile()), str(folder / "a b.mlir"), "--compile-to=input", "-o", str(out)]
    with caplog.at_level(logging.DEBUG, logger="npu_studio"):
        proc = processes.run_child(cmd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()
    (line,) = _invocations(caplog)
    assert shlex.split(line) == cmd
    assert line.startswith(str(toolchain.iree_compile()))
    (record,) = [r for r in caplog.records if r.getMessage().startswith(INVOKING)]
    assert record.levelno == logging.INFO
    ended = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and " ended " in r.getMessage()]
    assert len(ended) == 1 and ended[0].startswith("iree-compile (pid ") and "ended with 0 after" in ended[0]


def test_the_wrapper_is_not_logged_and_the_shell_runs_exactly_what_was_logged(caplog, tmp_path):
    cmd = ["printf", "%s|", "a b", "$HOME", "it's", "*"]
    with caplog.at_level(logging.INFO, logger="npu_studio"):
        proc = processes.run_child(cmd)
    (line,) = _invocations(caplog)
    assert "setpriv" not in line and "/bin/sh" not in line
    pasted = subprocess.run(line, shell=True, capture_output=True, text=True, cwd=tmp_path)
    assert pasted.stdout == proc.stdout == "a b|$HOME|it's|*|"


def test_a_timeout_is_a_warning_and_the_end_a_debug_record(caplog):
    with caplog.at_level(logging.DEBUG, logger="npu_studio"):
        with pytest.raises(subprocess.TimeoutExpired):
            processes.run_child(["sleep", "30"], timeout=0.2)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage().startswith("Killing sleep (pid ")
    assert warning.getMessage().endswith("no end within 0.2 s")
    assert any("ended by signal 9" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


def test_changed_variables_lead_and_another_folder_follows():
    env = dict(os.environ, NPU_FAULT="1 2", PATH=os.environ.get("PATH", ""))
    text = processes.describe_command(["tool", "x y"], cwd="/some where", env=env)
    assert text == "NPU_FAULT='1 2' tool 'x y' (in /some where)"
    assert processes.describe_command(["tool"], cwd=os.getcwd()) == "tool"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "npu_studio", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def _log_lines(stderr: str, level: str = "INFO") -> list[str]:
    prefix = f"npu-studio: {level}: "
    return [ln[len(prefix):] for ln in stderr.splitlines() if ln.startswith(prefix)]


def test_verbose_compile_shows_each_tool_it_runs_and_the_output_is_otherwise_unchanged(tmp_path):
    loud = _cli("-v", "compile", EXAMPLE, "--workspace", tmp_path / "loud")
    quiet = _cli("compile", EXAMPLE, "--workspace", tmp_path / "quiet")
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert quiet.stderr == ""
    assert all(ln.startswith("npu-studio: INFO: Invoking ") for ln in loud.stderr.splitlines()), loud.stderr
    runs = [shlex.split(ln[len(INVOKING):]) for ln in _log_lines(loud.stderr)]
    compiler = str(toolchain.iree_compile())
    assert [compiler, "--version"] in runs  # the version the workspace records
    (compile_run,) = [r for r in runs if r[0] == compiler and "-o" in r]
    assert compile_run[1] == str(tmp_path / "loud" / "imported.mlir")
    assert "--iree-hal-target-device=local" in compile_run
    words = [[w for w in ln.split() if not w[0].isdigit()] for ln in quiet.stdout.splitlines()]
    assert words == [[w for w in ln.replace("loud", "quiet").split() if not w[0].isdigit()]
                     for ln in loud.stdout.splitlines()]


def test_verbose_after_the_command_and_twice_adds_how_each_tool_ended(tmp_path):
    proc = _cli("compile", EXAMPLE, "--workspace", tmp_path / "ws", "-vv")
    assert proc.returncode == 0, proc.stderr
    assert any(ln.startswith("iree-compile (pid ") and " ended with 0 after " in ln
               for ln in _log_lines(proc.stderr, "DEBUG")), proc.stderr
    assert _log_lines(proc.stderr, "INFO")


def test_verbose_version_prints_the_same_versions_plus_the_tool_line():
    plain, loud = _cli("--version"), _cli("-v", "--version")
    assert plain.stdout == loud.stdout and plain.stderr == ""
    assert _log_lines(loud.stderr) == [f"Invoking {shlex.quote(str(toolchain.iree_compile()))} --version"]


def test_the_ir_views_type_parse_is_logged_at_debug_only_so_the_log_dock_stays_quiet(caplog):
    """The IR view parses every phase it shows in a child for hover types; the Log dock (INFO and up)
    must not fill with one "Invoking" line per phase switch."""
    from npu_studio.core.ir.nav_describe import parsed_types_in_child

    with caplog.at_level(logging.DEBUG, logger="npu_studio"):
        types = parsed_types_in_child(TINY_MLIR)
    assert types is not None and types[(2, "%0")] == "tensor<4xf32>"  # the parse ran: MLIR's own type
    records = [r for r in caplog.records if r.getMessage().startswith(INVOKING)]
    assert len(records) == 1 and records[0].levelno == logging.DEBUG
    assert "npu_studio.core.ir.nav_describe" in records[0].getMessage()
