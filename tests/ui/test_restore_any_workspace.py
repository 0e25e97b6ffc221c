"""Restore never crashes, whatever the workspace holds (issue 37, item 1).

A workspace holding every artifact the app and the CLI write (tests/ui/full_workspace.py) is
reopened in the window as it is, and then once per damaged copy: each artifact truncated, of the
wrong JSON types, replaced by a folder, or binary garbage. Each start shows the model with the
rest intact (the resumed edit in flow, the stream draft, the dispatch in the table), and at most
one banner, which names the damaged file; nothing raises. `npu-studio --screenshot` exits 0 on
the same damaged copies.
"""

from __future__ import annotations

import os

import shutil
import time

import pytest
from PySide6 import QtWidgets

from npu_studio.core.npu.target import target_store
from npu_studio.core.npu.target.target import RESOURCES

from .full_workspace import ARTIFACTS, DRAFT_MARK, EDIT_MARK, damage, full_workspace
from .test_screenshot import run_app

pytestmark = pytest.mark.slow  # builds the workspace with the CLI (about a minute), then ~40 restarts

JSON_KINDS = ("truncated", "wrong types", "a folder", "binary garbage")
TEXT_KINDS = ("a folder", "binary garbage")
# What a reopen reads: damaging these must be named. The rest is read only when the user asks for it
# (a diff, a pass trace, a run), or is rebuilt by the reopen (the NPU program and its simulation).
READ_AT_RESTORE = {"draft", "compile profile", "executable compile times", "recorded NPU target", "manifest",
                   "edited phase snapshot"}
UNREADABLE_KINDS = ("a folder", "binary garbage")  # the reader cannot take these, whatever the format

ALL_CASES = [(what, kind) for what, rel in ARTIFACTS.items()
             for kind in (JSON_KINDS if rel.endswith(".json") else TEXT_KINDS)]
# `make test` damages each artifact a reopen reads once, the kinds taken in turn (every kind still
# met), and three it must not read (each restart costs seconds: the suite has a time budget);
# `make fuzz` (NPU_STUDIO_FUZZ_PROFILE=fuzz) runs every artifact with every kind.
NOT_READ_SAMPLE = {"variant", "NPU program", "numerics check report"}
_ONE_EACH = [(what, (JSON_KINDS if rel.endswith(".json") else TEXT_KINDS)[i % (4 if rel.endswith(".json") else 2)])
             for i, (what, rel) in enumerate(ARTIFACTS.items()) if what in READ_AT_RESTORE | NOT_READ_SAMPLE]
CASES = ALL_CASES if os.environ.get("NPU_STUDIO_FUZZ_PROFILE") == "fuzz" else _ONE_EACH


def settle(window, seconds: float = 120.0) -> None:
    """Wait until every job the reopen started (indexes, NPU pipeline, simulation) has ended."""
    deadline, quiet = time.monotonic() + seconds, 0
    while quiet < 5:
        assert time.monotonic() < deadline, f"jobs still running: {window.jobs.history}"
        QtWidgets.QApplication.processEvents()
        time.sleep(0.05)
        quiet = 0 if window.jobs.is_running() else quiet + 1


def reopen_and_visit(window, root) -> None:
    """Reopen `root` as a restart does, then look at every phase and the dispatch (what a user would)."""
    window.show_all_docks()  # every area reads what it shows
    assert window.open_path(root) or window.error_banner.isVisible()
    settle(window)
    if window.workspace is not None:
        for phase in [*window.workspace.manifest.phases, "npu"]:
            window.show_phase(phase)
            QtWidgets.QApplication.processEvents()
        window.select_dispatch(0)
        settle(window)


def banner(window) -> str:
    return window.error_banner.text() if window.error_banner.isVisible() else ""


def test_the_full_workspace_reopens_with_everything_in_it(window, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(full_workspace(), root, symlinks=True)
    reopen_and_visit(window, root)
    assert banner(window) == ""
    assert_rest_intact(window, damaged=None)
    assert window.compile_profile.profile is not None  # the recorded profile is on show


def assert_rest_intact(window, damaged: str | None) -> None:
    assert window.workspace is not None
    window.show_phase("flow")
    if damaged not in ("edited phase snapshot",):
        assert window.ir_view.text().startswith(EDIT_MARK)  # the resumed edit is the flow phase
    if damaged != "draft":
        assert window.drafts["stream"].startswith(DRAFT_MARK)  # the uncompiled draft came back
    window.show_phase("dispatch-creation")  # a phase no case damages: its dispatch is listed
    assert window.dispatch_table.rowCount() == 1


@pytest.mark.parametrize(("what", "kind"), CASES, ids=[f"{w}-{k}".replace(" ", "_") for w, k in CASES])
def test_a_damaged_artifact_is_named_and_the_rest_reopens(window, tmp_path, what, kind):
    root = tmp_path / "ws"
    shutil.copytree(full_workspace(), root, symlinks=True)
    rel = ARTIFACTS[what]
    damage(root / rel, kind)
    before = (root / rel).read_bytes() if (root / rel).is_file() else None
    reopen_and_visit(window, root)  # an exception in any slot fails the test (pytest-qt)
    shown = banner(window)
    assert "internal error" not in shown and "Traceback" not in shown
    if shown:  # one banner, naming the damaged file and nothing else
        assert rel in shown, shown
        assert all(rel in line for line in shown.splitlines()), shown
    if what in READ_AT_RESTORE and kind in UNREADABLE_KINDS:
        assert rel in shown, f"{rel} ({kind}) was not named: {shown!r}"
    if what == "manifest":  # the workspace itself: nothing else can open without it
        assert window.workspace is None and window.isVisible()
        return
    assert_rest_intact(window, what)
    if what == "draft":  # the user's draft is never rewritten or removed by a reopen
        assert ((root / rel).read_bytes() if (root / rel).is_file() else None) == before
        assert (root / rel).exists()


def test_a_damaged_user_target_in_the_config_folder_leaves_the_picker_and_the_model(window, tmp_path):
    bad = target_store.save_edit((RESOURCES / "default.toml").read_text().replace("rows = 32", "rows = 16"),
                                 RESOURCES / "default.toml")
    bad.write_bytes(b"\xff\xfe" + bytes(range(256)))
    root = tmp_path / "ws"
    shutil.copytree(full_workspace(), root, symlinks=True)
    reopen_and_visit(window, root)
    assert_rest_intact(window, None)
    assert "internal error" not in banner(window)


@pytest.mark.parametrize("what", ["compile profile", "draft", "recorded NPU target", "executable compile times"])
def test_screenshot_of_a_damaged_workspace_exits_0(tmp_path, what):
    root = tmp_path / "ws"
    shutil.copytree(full_workspace(), root, symlinks=True)
    damage(root / ARTIFACTS[what], "binary garbage")
    out = tmp_path / "shot.png"
    done = run_app("--screenshot", str(out), "--size", "1280x800", "--all-docks", str(root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and out.is_file()


def test_screenshot_of_the_full_workspace_exits_0(tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(full_workspace(), root, symlinks=True)
    done = run_app("--screenshot", str(tmp_path / "shot.png"), "--size", "1280x800", "--all-docks", str(root),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

