"""A received workspace whose own folders are symbolic links to the user's files: every command that
would write, rename or delete through them refuses in one line, before anything outside changes
(core/workspace/confine.py), and a command that runs what the workspace holds asks for trust first.

The truth is the file system: a byte-for-byte snapshot of the user's folder beside the workspace
(`tree`) is the same after the command, and the command ends with exit 2 and one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .test_workspace_trust import cli, edit_manifest, refused_in_one_line, sent, tree, user  # noqa: F401


def link(ws_root: Path, name: str, target: Path) -> None:
    """Make `ws_root/name` a link to `target` (whatever was there goes: the attacker's workspace)."""
    path = ws_root / name
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    target.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target, target_is_directory=True)


def files(folder: Path, content: dict[str, str]) -> None:
    for rel, text in content.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


SUBSTITUTION = [{"name": "x", "kind": "source", "file": "imported.mlir", "enabled": True}]


def test_substitute_off_never_writes_through_a_linked_substitutions_folder(sent, user):
    _, mine, _ = user
    files(mine, {"subs/plain/keep.txt": "k", "subs/compiler/imported.mlir": ""})
    link(sent.root, "substitutions", mine / "subs")
    edit_manifest(sent, lambda d: d.update(substitutions=SUBSTITUTION))
    before = tree(mine)

    refused_in_one_line(cli("substitute", sent.root, "--off", "x"), "substitutions", "symbolic link")
    assert tree(mine) == before


def test_substitute_off_with_only_the_plain_folder_linked_is_one_line(sent, user):
    _, mine, _ = user
    files(mine, {"plain/keep.txt": "k"})
    files(sent.root, {"substitutions/compiler/imported.mlir": ""})
    link(sent.root, "substitutions/plain", mine / "plain")
    edit_manifest(sent, lambda d: d.update(substitutions=SUBSTITUTION))
    before = tree(mine)

    refused_in_one_line(cli("substitute", sent.root, "--off", "x"), "substitutions/plain", "symbolic link")
    assert tree(mine) == before and sent.root.joinpath("substitutions/plain").is_symlink()


def test_passes_never_moves_or_deletes_through_a_linked_passes_folder(sent, user):
    _, mine, _ = user
    files(mine, {"pp/flow/keep.txt": "k"})
    link(sent.root, "passes", mine / "pp")
    before = tree(mine)

    refused_in_one_line(cli("passes", sent.root, "flow"), "passes", "symbolic link")
    assert tree(mine) == before


def edited_flow(ws_root: Path, folder: Path) -> Path:
    text = (ws_root / "phases" / "06.flow.mlir").read_text()
    path = folder / "EDITED_FLOW.mlir"
    path.write_text("// edited by the user\n" + text)
    return path


@pytest.mark.parametrize("linked", [("builds", "originals"), ("builds",), ("originals",)])
def test_resume_never_writes_through_linked_builds_or_originals(sent, user, tmp_path, linked):
    _, mine, _ = user
    files(mine, {"bb/previous/keep.txt": "k", "oo/07.stream.mlir": "user's"})
    for name in linked:
        link(sent.root, name, mine / ("bb" if name == "builds" else "oo"))
    before = tree(mine)

    proc = cli("resume", edited_flow(sent.root, tmp_path), "--from", "flow", "--workspace", sent.root)
    refused_in_one_line(proc, "symbolic link", linked[-1])
    assert tree(mine) == before


def test_resume_of_an_unchanged_snapshot_never_deletes_through_a_linked_edits_folder(sent, user):
    _, mine, _ = user
    files(mine, {"ee/drafts/06.flow.mlir": "the user's own text"})
    link(sent.root, "edits", mine / "ee")
    before = tree(mine)

    proc = cli("resume", sent.root / "phases" / "06.flow.mlir", "--from", "flow", "--workspace", sent.root)
    refused_in_one_line(proc, "edits", "symbolic link")
    assert tree(mine) == before


def test_simulate_check_asks_trust_before_any_write_and_never_writes_through_npu_check(sent, user):
    _, mine, _ = user
    files(mine, {"nn/check/dispatches-userfile.vmfb": "user's"})
    (sent.root / "npu").mkdir(exist_ok=True)
    link(sent.root, "npu/check", mine / "nn" / "check")
    before = tree(mine)

    refused_in_one_line(cli("simulate", sent.root, "--check"), "not created by you", "--trust")
    assert tree(mine) == before
    refused_in_one_line(cli("simulate", sent.root, "--check", "--trust"), "npu/check", "symbolic link")
    assert tree(mine) == before


def test_the_trust_check_of_trace_comes_before_its_dispatch_cache_is_written(sent, user):
    _, mine, _ = user
    files(mine, {"nn/check/keep.txt": "k"})
    (sent.root / "npu").mkdir(exist_ok=True)
    link(sent.root, "npu/check", mine / "nn" / "check")
    before = tree(mine)

    refused_in_one_line(cli("trace", sent.root), "not created by you", "--trust")
    assert tree(mine) == before
    refused_in_one_line(cli("trace", sent.root, "--trust"), "npu/check", "symbolic link")
    assert tree(mine) == before


def test_a_confined_cache_is_still_written_where_nothing_is_linked(sent, user):
    """The refusal is about links, not about caches: the same call in a plain folder builds and caches."""
    from npu_studio.core.run.dispatches import iree_dispatches

    vmfb = iree_dispatches.build(sent.snapshot_path("flow"), sent.root / iree_dispatches.CACHE_DIR, root=sent.root)
    assert vmfb.parent == (sent.root / iree_dispatches.CACHE_DIR).resolve() and vmfb.stat().st_size > 0
    assert json.loads((sent.root / "manifest.json").read_text())  # the workspace itself untouched


def test_substitute_asks_trust_before_it_writes_a_draft_or_a_copy(sent, user, tmp_path):
    edited = tmp_path / "edited.mlir"
    edited.write_text("hal.executable @x {}\n")
    before = tree(sent.root)
    proc = cli("substitute", sent.root, "--executable", "SingleConv$async_dispatch_0", "--source", edited)
    refused_in_one_line(proc, "not created by you", "--trust")
    assert tree(sent.root) == before
