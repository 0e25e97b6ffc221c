"""The app's dispatch-index job builds large snapshots' indexes in a child process (core/ir/dispatch_index/
child.py): cancelling the job, or closing the window, while the child parses leaves no process behind,
and the indexes it does build are the in-process `index_file`'s."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import logging
import shutil
from pathlib import Path

import pytest

from npu_studio.core.ir.dispatch_index import child, index_file, link_phase_indexes
from tests.core.test_dispatch_index_child import index_children, wait_for_child


@pytest.fixture
def every_snapshot_in_a_child(monkeypatch, tmp_path):
    monkeypatch.setattr(child, "CHILD_MIN_BYTES", 0)  # the example's small snapshots too
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing indexed before: a child runs


def _open_and_catch_a_child(window, example_workspace, tmp_path) -> int:
    root = tmp_path / "ws"
    shutil.copytree(example_workspace.root, root)
    assert window.open_path(root)
    return wait_for_child()  # polled while the child still imports: it has not finished


def killed(caplog, pid: int) -> bool:
    """processes.kill_group logged that it killed `pid` on cancel (the child did not just finish)."""
    return any(f"(pid {pid})" in r.getMessage() and r.getMessage().endswith("cancelled") for r in caplog.records)


def test_a_cancelled_index_job_leaves_no_child(window, qtbot, example_workspace, tmp_path, every_snapshot_in_a_child,
                                               caplog):
    caplog.set_level(logging.WARNING, logger="npu_studio.core.processes")
    pid = _open_and_catch_a_child(window, example_workspace, tmp_path)
    window.jobs.cancel("index")
    qtbot.waitUntil(lambda: not window.jobs.is_running("index"), timeout=60_000)
    assert killed(caplog, pid) and not Path(f"/proc/{pid}").exists()  # killed and reaped
    assert index_children() == []
    assert not any("cancelled" in e for e in window.session.index_errors.values())  # not a snapshot's error


def test_closing_the_window_mid_index_leaves_no_child(window, qtbot, example_workspace, tmp_path,
                                                      every_snapshot_in_a_child, caplog):
    caplog.set_level(logging.WARNING, logger="npu_studio.core.processes")
    pid = _open_and_catch_a_child(window, example_workspace, tmp_path)
    window.close()
    qtbot.waitUntil(lambda: not window.jobs.is_running(), timeout=60_000)
    assert killed(caplog, pid) and not Path(f"/proc/{pid}").exists()
    assert index_children() == []


def test_indexes_built_in_children_are_the_in_process_ones(window, qtbot, example_workspace, tmp_path,
                                                            every_snapshot_in_a_child):
    root = tmp_path / "ws"
    shutil.copytree(example_workspace.root, root)
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        assert window.open_path(root)
    got = window.session.indexes
    expected = {phase: index_file(index.path, phase) for phase, index in got.items()}
    link_phase_indexes(expected)  # as the job links its indexes
    assert "flow" in got and got == expected
    assert window.session.index_errors == {}
    assert index_children() == []
