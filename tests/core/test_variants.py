"""Build variants: recorded only after the compiler accepted them, built as transactions, removed without loss."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from npu_studio.core.errors import Cancelled, CompileFailed, StudioError
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.manifest import Manifest
from npu_studio.core.workspace.workspace import Workspace

from ..conftest import EXAMPLE
from .onnx_reference import run_onnxruntime
from .test_hostile_inputs import tree


def test_variant_builds_into_its_own_folder_and_matches_onnxruntime(fresh_example):
    ws = fresh_example
    main_before = {k: v for k, v in tree(ws.root).items() if k != "manifest.json"}
    variants.create(ws, "o3", "--iree-opt-level=O3")
    built = variants.build(ws, "o3")
    # The compiler really got the flag (its recorded command line), and the main build was not touched.
    assert "--iree-opt-level=O3" in built.build.command
    assert {k: v for k, v in tree(ws.root).items() if k in main_before} == main_before
    assert built.vmfb_path == ws.root / "variants" / "o3" / "module.vmfb" and built.vmfb_path.is_file()
    assert set(built.build.phases) == set(ws.manifest.phases)
    assert all(p.is_file() for p in built.build.snapshots().values())
    # Reopened from disk, the variant is listed with its build.
    again = Workspace.open(ws.root)
    assert [v.name for v in variants.variants(again)] == ["o3"]
    assert variants.get(again, "o3").vmfb_path == built.vmfb_path
    # Its module computes what onnxruntime computes.
    sig = pick_function(ws.snapshot_path("input"))
    inputs = random_inputs(sig, seed=3)
    ours = run_vmfb(built.vmfb_path, sig.name, inputs)
    ref = run_onnxruntime(EXAMPLE, inputs)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("flags, compiler, says", [
    ("--no-such-flag", None, "'--no-such-flag' refused: iree-compile has no such option"),
    ("--iree-opt-level=O9", None, "not a valid optimization level"),
    ("-o elsewhere.vmfb", None, "-o is set by the build itself"),
    ("", "/no/such/iree-compile", "no such compiler"),
    ("", "/bin/true", "is not iree-compile"),
])
def test_bad_variant_is_one_line_and_leaves_the_workspace_unchanged(fresh_example, flags, compiler, says):
    before = tree(fresh_example.root)
    with pytest.raises(StudioError) as info:
        variants.create(fresh_example, "v", flags, compiler=compiler)
    assert says in str(info.value) and "\n" not in str(info.value)
    assert tree(fresh_example.root) == before
    assert fresh_example.manifest.variants == {}


def test_another_compiler_is_recorded_with_its_version(fresh_example, tmp_path):
    from npu_studio.core.compile import toolchain

    # A second install of iree-compile: here a wrapper script that runs the installed one.
    other = tmp_path / "other-install" / "iree-compile"
    other.parent.mkdir()
    other.write_text(f"#!/bin/sh\nexec '{toolchain.iree_compile()}' \"$@\"\n")
    other.chmod(other.stat().st_mode | stat.S_IXUSR)
    v = variants.create(fresh_example, "other", compiler=other)
    assert v.compiler == str(other.resolve())
    assert v.compiler_version == toolchain.compiler_version()
    built = variants.build(fresh_example, "other")
    assert built.build.command[0] == str(other.resolve())


def test_failed_and_cancelled_builds_leave_the_workspace_byte_identical(fresh_example):
    ws = fresh_example
    # Accepted when the flags are checked (the CPU is only looked up at code generation), fails in the build.
    variants.create(ws, "badcpu", "--iree-llvmcpu-target-cpu=no-such-cpu")
    before = tree(ws.root)
    with pytest.raises(CompileFailed):
        variants.build(ws, "badcpu")
    assert tree(ws.root) == before
    assert not list(ws.root.glob(".staging-*"))

    variants.create(ws, "c")
    before = tree(ws.root)
    job = variants.build_job(ws, "c", on_progress=lambda done, running: done and job.cancel())
    with pytest.raises(Cancelled):
        job.run()
    assert tree(ws.root) == before
    assert variants.get(ws, "c").build is None


def test_rebuild_and_remove_keep_the_users_files(fresh_example):
    ws = fresh_example
    variants.create(ws, "v", "--iree-opt-level=O1")
    variants.build(ws, "v")
    note = ws.root / "variants" / "v" / "my-notes.txt"
    note.write_text("why this variant\n")
    first = ws.manifest.variants["v"]["build"]["built"]
    variants.build(ws, "v")
    assert note.read_text() == "why this variant\n"
    assert ws.manifest.variants["v"]["build"]["built"] > first
    built_files = [ws.root / f for f in variants._build_files(ws.manifest.variants["v"]["build"])]
    assert built_files and all(f.is_file() for f in built_files)
    variants.remove(ws, "v")
    assert note.read_text() == "why this variant\n"
    assert not any(f.exists() for f in built_files)
    assert "v" not in Manifest.load(ws.root).variants


def test_old_manifest_without_variants_opens_and_keeps_unknown_keys(fresh_example):
    path = fresh_example.root / "manifest.json"
    data = json.loads(path.read_text())
    data.pop("variants", None)
    data["from_a_later_version"] = {"x": 1}
    path.write_text(json.dumps(data))
    ws = Workspace.open(fresh_example.root)
    assert variants.variants(ws) == []
    variants.create(ws, "v")
    saved = json.loads(path.read_text())
    assert saved["from_a_later_version"] == {"x": 1} and saved["variants"]["v"]["flags"] == []


def test_manifest_naming_a_variant_file_outside_the_workspace_is_refused(fresh_example):
    path = fresh_example.root / "manifest.json"
    data = json.loads(path.read_text())
    data["variants"] = {"v": {"flags": [], "build": {"phases": {}, "vmfb": "../../etc/passwd"}}}
    path.write_text(json.dumps(data))
    with pytest.raises(StudioError, match="vmfb"):
        Workspace.open(fresh_example.root)
    assert os.path.exists(path)


def test_cli_bad_variant_exits_2_with_one_line_and_a_good_one_builds(fresh_example):
    from .test_cli import cli

    before = tree(fresh_example.root)
    for args in (["--flags=--no-such-flag"], ["--compiler=/bin/true"], ["--compiler=/no/such/compiler"]):
        proc = cli("variant", fresh_example.root, "create", "v", *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    assert tree(fresh_example.root) == before
    assert cli("variant", fresh_example.root, "create", "v", "--flags=--iree-opt-level=O1").returncode == 0
    assert cli("variant", fresh_example.root, "build", "v").returncode == 0
    listed = json.loads(cli("variant", fresh_example.root, "list", "--json").stdout)
    assert listed[0]["name"] == "v" and listed[0]["built"] and listed[0]["flags"] == ["--iree-opt-level=O1"]


def test_reimport_keeps_variants_and_remove_drops_their_records(fresh_example):
    from npu_studio.core.debug.compile_profile import ProfileJob

    ws = fresh_example
    variants.create(ws, "v.1", "--iree-opt-level=O1")
    variants.build(ws, "v.1")
    ProfileJob(ws, "v.1", phases=["hal"]).run()
    ProfileJob(ws, "main", phases=["hal"]).run()
    assert (ws.root / "profiles" / "v.1.json").is_file()
    again = Workspace.create(EXAMPLE, ws.root)
    again.compile()
    assert variants.get(again, "v.1").vmfb_path.is_file()
    variants.remove(again, "v.1")
    assert not (ws.root / "profiles" / "v.1.json").exists()
    assert (ws.root / "profiles" / "main.json").is_file()  # another build's record stays


def test_a_compile_through_an_older_handle_keeps_the_variants(fresh_example):
    other = Workspace.open(fresh_example.root)  # e.g. the app's job, with its own handle
    variants.create(other, "v")
    fresh_example.compile()  # this handle never saw the variant
    assert "v" in Manifest.load(fresh_example.root).variants
