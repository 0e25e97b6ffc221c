"""CompileOptions: the flags it stands for, validation, and its record in the manifest."""

from __future__ import annotations

import subprocess

import pytest

from npu_studio.core import toolchain
from npu_studio.core.compile_options import CompileOptions
from npu_studio.core.workspace import Workspace


def test_flags_are_ones_iree_compile_knows():
    help_text = subprocess.run([str(toolchain.iree_compile()), "--help-list-hidden"], capture_output=True,
                               text=True, timeout=120).stdout
    flags = CompileOptions(from_phase="flow").flags()
    assert flags[-1] == "--compile-from=flow" and "--compile-from" not in " ".join(CompileOptions().flags())
    for flag in flags:
        assert f"{flag.split('=')[0]}=" in help_text, flag


def test_bad_options_name_the_valid_values():
    with pytest.raises(ValueError, match="llvm-cpu"):
        CompileOptions(target="cuda")
    with pytest.raises(ValueError, match="dispatch-creation"):
        CompileOptions(from_phase="flo")


def test_the_manifest_records_the_options_of_the_compile(example_workspace):
    manifest = Workspace.open(example_workspace.root).manifest
    options = CompileOptions.from_json(manifest.options)
    assert options == CompileOptions(target="llvm-cpu", from_phase="start")
    assert manifest.command[2 : 2 + len(options.flags())] == options.flags()
