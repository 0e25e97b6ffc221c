"""A workspace someone sent runs nothing and writes nowhere else (core/workspace/trust.py, confine.py,
core/compile/flag_policy.py, core/workspace/index_cache.py).

Each crafted workspace is what an attacker could send. The truth checked is the file system
itself: no marker file appears (the crafted code never ran), the user's folder beside the
workspace is byte-identical, and the command ends with exit 2 and one line saying what it refused.
The user here trusts nothing but what this install created (a config without the test run's
trusted folders, see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from npu_studio.core.errors import WorkspaceError
from npu_studio.core.workspace import trust
from npu_studio.core.workspace.workspace import Workspace

from ..conftest import EXAMPLE


def cli(*args):
    return subprocess.run([sys.executable, "-m", "npu_studio", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def tree(folder: Path) -> dict:
    """Every entry under `folder`: a file's bytes, a link's target, a folder's mark."""
    out = {}
    for path in sorted(Path(folder).rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = ("link", os.readlink(path)) if path.is_symlink() else \
            ("dir", None) if path.is_dir() else ("file", path.read_bytes())
    return out


def refused_in_one_line(proc, *words) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def user(tmp_path, monkeypatch):
    """The user's own config (trusting nothing yet) and a folder of theirs, with a snapshot of it."""
    config = tmp_path / "user-config"
    config.mkdir()
    monkeypatch.setenv("NPU_STUDIO_CONFIG", str(config))
    monkeypatch.setattr(trust, "_run_trusted", False)
    mine = tmp_path / "users-files"
    (mine / "keep").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    (mine / "keep" / "a.txt").write_text("a")
    return config, mine, tree(mine)


@pytest.fixture
def sent(fresh_example, user):
    """The compiled example, as someone sent it: a copy, not created on this machine."""
    return fresh_example


def edit_manifest(ws: Workspace, change) -> None:
    path = ws.root / "manifest.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def variant_record(flags=(), compiler=None, build=None) -> dict:
    return {"flags": list(flags), "compiler": compiler, "compiler_version": "IREE compiler version 0 @ forged",
            "created": 0.0, "build": build}


def main_build_record(ws: Workspace) -> dict:
    """A variant build record naming the main build's own files (inside the workspace)."""
    m = json.loads((ws.root / "manifest.json").read_text())
    return {"phases": m["phases"], "vmfb": m["vmfb"], "files": [], "command": [], "total_seconds": 1.0,
            "built": 0.0}


# -- code from a sent workspace ----------------------------------------------------------------


def plant_shell_compiler(ws: Workspace, marker: Path) -> None:
    """Variants whose recorded compiler is /bin/sh, and an imported.mlir whose first line is an MLIR
    comment that is also a shell command: iree-compile's first argument is that file."""
    from npu_studio.core.debug import dispatch_break as brk
    from npu_studio.core.debug.precision import DEMOTIONS, PREFIX

    function, ordinal = brk.break_target(ws, 0)
    break_flags = [brk.SYNC_ENTRY, brk.NO_CONST_EVAL, f"{brk.BREAK_FLAG}=@{function}:{ordinal}"]
    text = ws.imported_path.read_text()
    ws.imported_path.write_text(f"//bin/true; touch '{marker}'; exit 0\n{text}")

    def change(data):
        data["variants"] = {
            "evil": variant_record(compiler="/bin/sh", build=main_build_record(ws)),
            brk.variant_name(0): variant_record(break_flags, "/bin/sh"),
            PREFIX + "f16": variant_record(DEMOTIONS["f16"], "/bin/sh"),
        }
    edit_manifest(ws, change)


SHELL_COMPILER_COMMANDS = [
    ["variant", "{ws}", "build", "evil"],
    ["profile", "{ws}", "--build", "evil", "--refresh"],
    ["compare", "{ws}", "main", "evil", "--profile", "--no-run"],
    ["trace", "{ws}", "--break", "0"],
    ["precision", "{ws}", "--demote", "f16"],
]


@pytest.mark.parametrize("command", SHELL_COMPILER_COMMANDS, ids=lambda c: " ".join(c[:1] + c[2:4]))
def test_a_recorded_shell_compiler_never_runs(sent, user, tmp_path, command):
    _, mine, before = user
    marker = tmp_path / "MARKER"
    plant_shell_compiler(sent, marker)
    args = [a.format(ws=sent.root) for a in command]

    line = refused_in_one_line(cli(*args), "not created by you", "--trust")
    assert not marker.exists() and tree(mine) == before
    # Trusted for this run, the recorded compiler is checked again before use: /bin/sh is no iree-compile.
    line = refused_in_one_line(cli(*args, "--trust"), "/bin/sh", "is not iree-compile")
    assert not marker.exists() and tree(mine) == before, line


def shared_library_writing(marker: Path, folder: Path) -> Path:
    """A real shared library whose constructor writes `marker` the moment anything loads it."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the library")
    src = folder / "evil.c"
    src.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                   f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    lib = folder / "libevil.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True, timeout=120)
    return lib


def script_writing(marker: Path, folder: Path) -> Path:
    script = folder / "linker.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    script.chmod(0o755)
    return script


def recorded_flag(kind: str, marker: Path, tmp_path: Path, mine: Path) -> str:
    if kind == "load":
        return f"--load-pass-plugin={shared_library_writing(marker, tmp_path)}"
    if kind == "plugin":
        return f"--iree-load-plugin={shared_library_writing(marker, tmp_path)}"
    if kind == "linker":
        return f"--iree-llvmcpu-embedded-linker-path={script_writing(marker, tmp_path)}"
    return f"--mlir-print-ir-tree-dir={mine}"  # every pass's IR dumped into the user's folder


FLAG_KINDS = ["load", "plugin", "linker", "dump-outside"]


@pytest.mark.parametrize("kind", FLAG_KINDS)
def test_recorded_flags_are_checked_at_every_use(sent, user, tmp_path, kind):
    _, mine, before = user
    marker = tmp_path / "MARKER"
    flag = recorded_flag(kind, marker, tmp_path, mine)
    edit_manifest(sent, lambda d: d.setdefault("variants", {}).update(v=variant_record([flag])))
    trust.grant(sent.root)  # even in a workspace the user trusts, a recorded flag passes the policy

    refused_in_one_line(cli("variant", sent.root, "build", "v"), "manifest.json", "refused")
    assert not marker.exists() and tree(mine) == before


@pytest.mark.parametrize("kind", FLAG_KINDS)
def test_typed_flags_never_load_anything_while_checked(sent, user, tmp_path, kind):
    _, mine, before = user
    marker = tmp_path / "MARKER"
    flag = recorded_flag(kind, marker, tmp_path, mine)
    manifest = (sent.root / "manifest.json").read_bytes()

    refused_in_one_line(cli("variant", sent.root, "create", "x", f"--flags={flag}"), "refused")
    assert not marker.exists() and tree(mine) == before
    assert (sent.root / "manifest.json").read_bytes() == manifest


# -- writes stay inside ----------------------------------------------------------------------


def plant_journal_through_link(ws: Workspace, mine: Path) -> None:
    """A link to the user's folder and a committed publish that deletes and writes through it."""
    (ws.root / "link").symlink_to(mine)
    staging = ws.root / ".staging-999999-x"
    staging.mkdir()
    (staging / "planted").write_text("planted")
    plan = {"staging": staging.name, "moves": [["planted", "link/planted"]], "deletes": ["link/keep"],
            "manifest": (ws.root / "manifest.json").read_text()}
    (ws.root / "publish.journal").write_text(json.dumps(plan))


def test_a_journal_through_a_symlink_is_refused_by_a_read_only_command(sent, user):
    _, mine, before = user
    plant_journal_through_link(sent, mine)

    refused_in_one_line(cli("dispatches", sent.root), "publish.journal", "symbolic link", "left unapplied")
    assert tree(mine) == before
    assert (sent.root / "publish.journal").is_file()  # left as it was, for the user to look at
    with pytest.raises(WorkspaceError, match="symbolic link"):  # what the app's File > Open calls
        Workspace.open(sent.root)
    assert tree(mine) == before


def test_a_journal_bringing_in_a_link_then_writing_through_it_is_refused(sent, user):
    _, mine, before = user
    staging = sent.root / ".staging-999999-y"
    (staging / "d").mkdir(parents=True)
    (staging / "d" / "l").symlink_to(mine)
    (staging / "f").write_text("planted")
    plan = {"staging": staging.name, "moves": [["d", "d"], ["f", "d/l/planted"]], "deletes": [],
            "manifest": (sent.root / "manifest.json").read_text()}
    (sent.root / "publish.journal").write_text(json.dumps(plan))

    refused_in_one_line(cli("dispatches", sent.root), "symbolic link", "left unapplied")
    assert tree(mine) == before and not (sent.root / "d").exists()


def test_a_symlinked_variants_folder_is_refused(fresh_example, user):
    _, mine, before = user
    ws = fresh_example
    edit_manifest(ws, lambda d: d.setdefault("variants", {}).update(v=variant_record()))
    trust.grant(ws.root)
    (ws.root / "variants").symlink_to(mine)
    manifest = (ws.root / "manifest.json").read_bytes()

    refused_in_one_line(cli("variant", ws.root, "build", "v"), "variants is a symbolic link")
    assert tree(mine) == before and (ws.root / "manifest.json").read_bytes() == manifest


def test_a_symlinked_profiles_folder_is_refused(fresh_example, user):
    _, mine, before = user
    ws = fresh_example
    (ws.root / "profiles").symlink_to(mine)
    manifest = (ws.root / "manifest.json").read_bytes()

    refused_in_one_line(cli("profile", ws.root, "--phase", "input"), "profiles is a symbolic link")
    assert tree(mine) == before and (ws.root / "manifest.json").read_bytes() == manifest


# -- the dispatch index cache -----------------------------------------------------------------


class _Planted:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):  # what an attacker's pickle does when it is loaded
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("how", ["beside-a-shared-home", "others-can-write", "another-users-folder",
                                 "a-link-to-another-folder", "another-users-entry"])
def test_a_planted_cache_pickle_is_never_loaded(example_workspace, tmp_path, monkeypatch, how):
    from npu_studio.core import paths
    from npu_studio.core.ir.dispatch_index import index_file
    from npu_studio.core.workspace import index_cache

    shared = tmp_path / "shared-tmp"  # a /tmp-like home others can write
    shared.mkdir(mode=0o777)
    monkeypatch.setenv("NPU_STUDIO_HOME", str(shared / "workspaces"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    flow = example_workspace.snapshot_path("flow")
    name = f"{index_cache.cache_key(flow.read_bytes(), 'flow')}.pickle"
    marker = tmp_path / "MARKER"
    evil = pickle.dumps(_Planted(marker))
    folder = paths.dispatch_index_cache_dir()
    folder.parent.mkdir(parents=True)
    if how == "beside-a-shared-home":  # where the cache used to be
        folder = shared / "dispatch-index-cache"
        folder.mkdir()
    elif how == "others-can-write":
        folder.mkdir()
        folder.chmod(0o777)
    elif how == "another-users-folder":
        if os.geteuid() != 0:
            pytest.skip("making a folder of another user needs root")
        folder.mkdir(mode=0o700)
        os.chown(folder, 4242, 4242)
    elif how == "a-link-to-another-folder":
        other = tmp_path / "attackers"
        other.mkdir(mode=0o700)
        folder.symlink_to(other)
        folder = other
    else:
        folder.mkdir(mode=0o700)
    (folder / name).write_bytes(evil)
    if how == "another-users-entry":
        if os.geteuid() != 0:
            pytest.skip("making a file of another user needs root")
        os.chown(folder / name, 4242, 4242)

    index = index_cache.cached_index(flow, "flow", index_file)
    assert not marker.exists()
    assert index.to_json() == index_file(flow, "flow").to_json()  # built afresh, as if there were no cache


def test_the_cache_folder_is_made_private(example_workspace, tmp_path, monkeypatch):
    from npu_studio.core import paths
    from npu_studio.core.ir.dispatch_index import index_file
    from npu_studio.core.workspace import index_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index_cache.cached_index(example_workspace.snapshot_path("flow"), "flow", index_file)
    folder = paths.dispatch_index_cache_dir()
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.geteuid()
    assert [p.stat().st_mode & 0o777 for p in folder.iterdir()] == [0o600]


# -- a workspace created here still just works -------------------------------------------------


def test_a_workspace_created_here_runs_without_trust_and_a_copy_asks(user, tmp_path):
    config, _, _ = user
    ws = tmp_path / "made-here"
    assert cli("compile", EXAMPLE, "--workspace", ws).returncode == 0
    assert cli("run", ws).returncode == 0, "created by this install: no --trust needed"

    copy = tmp_path / "copied"
    shutil.copytree(ws, copy)
    refused_in_one_line(cli("run", copy), "not created by you", "running module.vmfb")
    assert cli("run", copy, "--trust").returncode == 0
    assert cli("run", copy).returncode == 2  # --trust is for that run only

    trust.grant(copy)  # what the app's dialog keeps
    assert cli("run", copy).returncode == 0
    # The decision lives in the user's config, never in the workspace.
    assert (config / trust.TRUST_FILE).is_file()
    assert tree(copy).keys() == tree(ws).keys()

