"""A big text shown a slice at a time, used as a new user would (issue 40, fresh eyes): what the view
shows once it has all arrived must be what the same text set whole shows.

Truths, independent of the view: the text's own lines (split by hand), a bare QPlainTextEdit given the
same text whole (Qt's own block count), Qt's own cursor and geometry, and the colour Qt gives the same
token on a line without the characters under test.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from npu_studio.ui.ir.streaming import FIRST_LINES, STREAM_OVER_LINES  # noqa: E402
from .test_ir_navigation import shown_navigable  # noqa: E402

LINES = STREAM_OVER_LINES + 5_000  # streamed: a first slice and several more


def code_lines(count: int) -> list[str]:
    return [f"    %v{n} = arith.addf %a, %b : f32" for n in range(1, count + 1)]


@pytest.fixture
def shown(qtbot):
    widget, parts = shown_navigable(qtbot, "%0 = foo.bar\n")
    yield parts
    widget.close()


def loaded(qtbot, view) -> None:
    qtbot.waitUntil(lambda: not view.stream.loading, timeout=60_000)


@pytest.mark.xfail(strict=True, reason="CRLF text streamed: a slice ends in '\\r', which Qt takes for a line "
                   "end, and the next slice starts with '\\n': one empty line more at every slice boundary, "
                   "every later line number off (F12, folds, regions, goto land on the wrong line)")
def test_a_crlf_text_streamed_has_the_lines_of_the_text(shown, qtbot):
    view = shown[0]
    lines = code_lines(LINES)
    text = "\r\n".join(lines) + "\r\n"
    bare = QtWidgets.QPlainTextEdit()
    bare.setPlainText(text)  # Qt's own reading of the same text, set whole
    view.set_text(text)
    loaded(qtbot, view)
    assert view.document().blockCount() == bare.document().blockCount() == LINES + 1
    far = LINES - 3
    assert view.document().findBlockByNumber(far - 1).text() == lines[far - 1]


@pytest.mark.xfail(strict=True, reason="the cursor at the end of the last line in (End on it, or a click past "
                   "its end) is carried along by every slice appended: once loaded it sits on the text's last "
                   "line, off screen, not where the user put it")
def test_the_cursor_stays_where_the_user_put_it_while_lines_arrive(shown, qtbot):
    view = shown[0]
    lines = code_lines(LINES)
    view.set_text("\n".join(lines))
    assert view.stream.loading
    view.setFocus()
    block = view.document().findBlockByNumber(FIRST_LINES - 1)
    view.setTextCursor(QtGui.QTextCursor(block))  # the last line shown so far, at its start
    QTest.keyClick(view, QtCore.Qt.Key.Key_End)  # to its end: the end of the document so far
    assert view.textCursor().blockNumber() == FIRST_LINES - 1
    loaded(qtbot, view)
    cursor = view.textCursor()
    assert (cursor.blockNumber() + 1, cursor.positionInBlock()) == (FIRST_LINES, len(lines[FIRST_LINES - 1]))


@pytest.mark.xfail(strict=True, reason="Ctrl+End pressed while the text arrives: the cursor is carried to the "
                   "last line by the appends but the view stays where it was, so the cursor is off screen")
def test_ctrl_end_while_loading_ends_with_the_last_line_on_screen(shown, qtbot):
    view = shown[0]
    lines = code_lines(LINES)
    view.set_text("\n".join(lines))
    assert view.stream.loading
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_End, QtCore.Qt.KeyboardModifier.ControlModifier)
    loaded(qtbot, view)
    qtbot.wait(50)  # a paint
    cursor = view.textCursor()
    assert cursor.blockNumber() + 1 == LINES  # Ctrl+End: the last line of the text
    assert view.viewport().rect().contains(view.cursorRect().center())  # and the user sees it
