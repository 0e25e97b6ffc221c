"""A failed resume brings its error into view, its message never covers the lines being edited, and
its banner goes when the next resume starts (issue 37, item 2)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui

from .test_edit_resume import open_copy, type_over

NOTES = "".join(f"// note {i}: read before the dispatch\n" for i in range(200))


def line_rect(view, line: int) -> QtCore.QRect:
    """Where 1-based `line` is drawn, in global coordinates."""
    block = view.document().findBlockByNumber(line - 1)
    rect = view.blockBoundingGeometry(block).translated(view.contentOffset()).toRect()
    return QtCore.QRect(view.viewport().mapToGlobal(rect.topLeft()), rect.size())


def visible(view, line: int) -> bool:
    rect = line_rect(view, line)
    port = QtCore.QRect(view.viewport().mapToGlobal(QtCore.QPoint(0, 0)), view.viewport().size())
    return port.contains(rect)


def test_a_failed_resume_shows_its_error_beside_the_edit_and_its_banner_ends_with_the_next_resume(
        window, qtbot, example_workspace, tmp_path):
    open_copy(window, qtbot, example_workspace, tmp_path / "ws")
    view, marks = window.ir_view, window.edit_controller.marks
    window.resize(1280, 800)
    window.edit_action.trigger()  # Edit IR
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton)  # the editor has the keyboard
    # Notes pasted at the top push the code down; then a typo far below, and a second edit under it.
    cursor = view.textCursor()
    cursor.movePosition(QtGui.QTextCursor.MoveOperation.Start)
    view.setTextCursor(cursor)
    view.insertPlainText(NOTES)
    type_over(qtbot, view, "%in, %in_1 : f32 loc(#loc1)", "%in, %in_9 : f32 loc(#loc1)")
    text = view.text()
    error_line = text[: text.index("%in_9")].count("\n") + 1
    type_over(qtbot, view, "linalg.yield %6 : f32 loc(#loc1)", "linalg.yield %6 : f32 loc(#loc1) ")
    edited = [error_line, error_line + 1]
    assert view.text().splitlines()[error_line].endswith(") ")  # the second edit is the next line
    # The user goes back to the top to read, then resumes with Ctrl+R.
    qtbot.keyClick(view, QtCore.Qt.Key.Key_Home, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert not visible(view, error_line)
    with qtbot.waitSignal(window.sig_compile_finished, timeout=120_000) as done:
        qtbot.keyClick(view, QtCore.Qt.Key.Key_R, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert done.args == [False]
    qtbot.wait(300)  # any queued scroll or layout lands
    assert marks.position is not None and marks.position[0] == error_line
    assert visible(view, error_line), "the error line is not on screen after the failed resume"
    assert marks.label.isVisible() and "undeclared SSA value" in marks.label.text()
    label = QtCore.QRect(marks.label.mapToGlobal(QtCore.QPoint(0, 0)), marks.label.size())
    for line in edited:
        assert not label.intersects(line_rect(view, line)), f"the error message covers edited line {line}"
    assert window.error_banner.isVisible() and "undeclared SSA value" in window.error_banner.text()

    # Fixed, and resumed again: the old failure's banner and marks go the moment the resume starts.
    type_over(qtbot, view, "%in, %in_9 : f32 loc(#loc1)", "%in, %in_1 : f32 loc(#loc1)")
    with qtbot.waitSignal(window.sig_compile_finished, timeout=120_000) as done:
        qtbot.keyClick(view, QtCore.Qt.Key.Key_R, QtCore.Qt.KeyboardModifier.ControlModifier)
        assert window.is_busy()
        assert not window.error_banner.isVisible(), window.error_banner.text()
        assert not marks.label.isVisible()
    assert done.args == [True]
