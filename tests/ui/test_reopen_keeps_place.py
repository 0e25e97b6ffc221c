"""Reading a workspace again keeps the user's place (issue 37): a substitution's rebuild reopens the
workspace it wrote, and a workspace opened again from Recent shows the phase and dispatch it was left at."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import shutil

from PySide6 import QtGui


def _open(window, qtbot, root) -> None:
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        assert window.open_path(root)


def _cursor_line(view) -> int:
    return view.textCursor().blockNumber() + 1


def test_the_same_workspace_read_again_keeps_phase_cursor_and_dispatch(window, qtbot, example_workspace, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(example_workspace.root, root)
    _open(window, qtbot, root)
    window.show_phase("stream")
    view = window.ir_view
    line = view.text().count("\n") // 2 + 1
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(line - 1))
    view.setTextCursor(cursor)
    window.select_dispatch(0)

    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.studio.open_workspace(root)  # what the Executables area does after a rebuild
    assert window.session.selection.phase == "stream"
    assert window.session.selection.dispatch == 0
    assert _cursor_line(view) == line
    assert view.text() == window.workspace.snapshot_path("stream").read_text(encoding="utf-8")


def test_recent_goes_back_to_where_the_workspace_was_left(window, qtbot, example_workspace, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(example_workspace.root, first)
    shutil.copytree(example_workspace.root, second)
    _open(window, qtbot, first)
    window.show_phase("stream")
    window.select_dispatch(0)
    _open(window, qtbot, second)
    assert window.session.selection.phase == "flow"  # never left anywhere: the default
    assert window.session.selection.dispatch is None

    (action,) = [a for a in window.recent_menu.actions() if a.data() == str(first)]
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        action.trigger()
    qtbot.waitUntil(lambda: window.session.selection.dispatch == 0, timeout=30_000)
    assert window.workspace.root == first and window.session.selection.phase == "stream"
