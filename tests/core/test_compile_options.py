"""CompileOptions: the flags it stands for, validation, and its record in the manifest."""

from __future__ import annotations

import subprocess

import pytest

from npu_studio.core.compile import toolchain
from npu_studio.core.compile.options import CompileOptions
from npu_studio.core.workspace.workspace import Workspace


def test_flags_are_ones_iree_compile_knows():
    help_text = subprocess.run([str(toolchain.iree_compile()), "--help-list-hidden"], capture_output=True,
                               text=True, timeout=120).stdout
    flags = CompileOptions(from_phase="flow", to_phase="hal").flags()
    assert flags[-2:] == ["--compile-from=flow", "--compile-to=hal"]
    assert "--compile-" not in " ".join(CompileOptions().flags())
    for flag in flags:
        assert f"{flag.split('=')[0]}=" in help_text, flag


def test_bad_options_name_the_valid_values():
    with pytest.raises(ValueError, match="llvm-cpu"):
        CompileOptions(target="cuda")
    with pytest.raises(ValueError, match="dispatch-creation"):
        CompileOptions(from_phase="flo")
    with pytest.raises(ValueError, match="nothing to compile from flow to abi"):
        CompileOptions(from_phase="flow", to_phase="abi")


def test_a_compile_that_stops_at_flow_writes_the_phases_up_to_flow_and_no_module(tmp_path):
    from npu_studio.core.compile.phases import SNAPSHOT_PHASES

    from ..conftest import EXAMPLE

    ws = Workspace.create(EXAMPLE, tmp_path / "ws")
    options = ws.compile_options(to_phase="flow")
    assert options.phases() == SNAPSHOT_PHASES[: SNAPSHOT_PHASES.index("flow") + 1]
    result = ws.compile_job(options=options).run()  # the job publishes into the workspace
    assert [t.phase for t in result.phases] == list(options.phases()) and result.vmfb is None
    assert list(ws.snapshots()) == list(options.phases()) and ws.manifest.vmfb is None
    assert "flow.executable" in ws.snapshot_path("flow").read_text()
    assert CompileOptions.from_json(Workspace.open(ws.root).manifest.options) == options


def test_the_manifest_records_the_options_of_the_compile(example_workspace):
    manifest = Workspace.open(example_workspace.root).manifest
    options = CompileOptions.from_json(manifest.options)
    assert options == CompileOptions(target="llvm-cpu", from_phase="start")
    assert manifest.command[2 : 2 + len(options.flags())] == options.flags()
