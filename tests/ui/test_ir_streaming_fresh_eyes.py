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


def streaming_with_focus(view) -> list[str]:
    """Code lines set in `view`, still arriving, the keyboard on the view."""
    lines = code_lines(LINES)
    view.set_text("\n".join(lines))
    assert view.stream.loading
    view.setFocus()
    return lines


def test_the_cursor_stays_where_the_user_put_it_while_lines_arrive(shown, qtbot):
    view = shown[0]
    lines = streaming_with_focus(view)
    block = view.document().findBlockByNumber(FIRST_LINES - 1)
    view.setTextCursor(QtGui.QTextCursor(block))  # the last line shown so far, at its start
    QTest.keyClick(view, QtCore.Qt.Key.Key_End)  # to its end: the end of the document so far
    assert view.textCursor().blockNumber() == FIRST_LINES - 1
    loaded(qtbot, view)
    cursor = view.textCursor()
    assert (cursor.blockNumber() + 1, cursor.positionInBlock()) == (FIRST_LINES, len(lines[FIRST_LINES - 1]))


def test_ctrl_end_while_loading_ends_with_the_last_line_on_screen(shown, qtbot):
    view = shown[0]
    streaming_with_focus(view)
    QTest.keyClick(view, QtCore.Qt.Key.Key_End, QtCore.Qt.KeyboardModifier.ControlModifier)
    loaded(qtbot, view)
    qtbot.wait(50)  # a paint
    cursor = view.textCursor()
    assert cursor.blockNumber() + 1 == LINES  # Ctrl+End: the last line of the text
    assert view.viewport().rect().contains(view.cursorRect().center())  # and the user sees it


# A line past the first slice with characters outside the BMP (two UTF-16 units each in Qt, one in Python).
EMOJI = "🦀" * 8
EMOJI_LINE = f'    %u = "foo.use"(%v1) {{note = "{EMOJI}"}} : (f32) -> tensor<4xf32> loc(#loc7)'
PLAIN_LINE = '    %w = "foo.use"(%v1) {note = "plain"} : (f32) -> tensor<4xf32> loc(#loc7)'


def emoji_text() -> tuple[str, int, int, int]:
    """The text, and the 1-based lines of `#loc7`'s definition, the emoji line and the plain line."""
    lines = ['#loc7 = loc("node7")', "module {"] + code_lines(LINES)
    at = FIRST_LINES + 500
    lines[at - 1] = EMOJI_LINE
    lines[at] = PLAIN_LINE
    return "\n".join(lines + ["}"]) + "\n", 1, at, at + 1


def qt_cursor_at(view, line: int, needle: str) -> QtGui.QTextCursor:
    """Qt's own cursor on the first character of `needle` in `line` (found by the document, not mapped)."""
    block = view.document().findBlockByNumber(line - 1)
    found = view.document().find(needle, block.position())
    assert found.blockNumber() == line - 1
    cursor = QtGui.QTextCursor(view.document())
    cursor.setPosition(found.selectionStart())
    return cursor


def test_f12_on_a_name_after_emoji_goes_to_its_definition(shown, qtbot):
    view, navigator = shown[0], shown[1]
    text, loc_def, emoji, _ = emoji_text()
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=60_000):
        view.set_text(text)
    loaded(qtbot, view)
    view.setTextCursor(qt_cursor_at(view, emoji, "#loc7"))
    assert navigator.go_to_definition()
    assert view.textCursor().blockNumber() + 1 == loc_def


def foreground_at(view, line: int, needle: str) -> QtGui.QColor:
    """The colour Qt paints the first character of `needle` on `line` with (its layout's formats)."""
    view.goto(line, 1)
    view.highlighter.ensure_highlighted(line - 1, line - 1)
    block = view.document().findBlockByNumber(line - 1)
    at = view.document().find(needle, block.position()).selectionStart() - block.position()
    for fmt in block.layout().formats():
        if fmt.start <= at < fmt.start + fmt.length:
            return fmt.format.foreground().color()
    return QtGui.QColor()


def test_tokens_after_emoji_are_coloured_as_on_a_plain_line(shown, qtbot):
    view = shown[0]
    text, _, emoji, plain = emoji_text()
    view.set_text(text)
    loaded(qtbot, view)
    for needle in ("tensor", "loc(", "#loc7", "->"):
        assert foreground_at(view, emoji, needle) == foreground_at(view, plain, needle), needle


def test_a_huge_line_of_operands_is_shortened_for_display_like_a_huge_constant(shown, qtbot):
    view = shown[0]
    lines = code_lines(LINES)
    huge = '    %big = "foo.op"(' + "%a, " * 1_250_000 + "%a) : () -> ()"  # 5 MB, on the third slice
    lines[FIRST_LINES + 9_000] = huge
    view.set_text("\n".join(lines))
    loaded(qtbot, view)
    block = view.document().findBlockByNumber(FIRST_LINES + 9_000)
    assert block.text().startswith('    %big = "foo.op"(%a, ')
    assert block.length() < 100_000  # a blob of 5 MB shows as a few dozen characters; a line of names should too


def hidden_lines(view) -> list[int]:
    doc = view.document()
    return [n + 1 for n in range(doc.blockCount()) if not doc.findBlockByNumber(n).isVisible()]


def test_edit_ir_after_a_streamed_text_folds_the_edit_documents_own_loc_run(shown, qtbot):
    view = shown[0]
    head = 300  # the text opens on a run of #loc aliases, as a flow snapshot does
    lines = [f'#loc{n} = loc("node{n}")' for n in range(1, head + 1)] + ["module {"] + code_lines(LINES)
    text = "\n".join(lines + ["}"])
    view.set_text(text)
    loaded(qtbot, view)
    view.use_document(view.new_document(text))  # what Edit IR does: the phase's own document (PhaseDocuments)
    assert hidden_lines(view) == list(range(2, head + 1))  # the run folds under its first line, nothing else


def test_f12_before_a_new_text_is_indexed_goes_once_it_is(shown, qtbot):
    """F12 pressed while a new text's index was still being built did nothing and was forgotten."""
    view, navigator = shown[0], shown[1]
    lines = code_lines(300) + ["    %far = arith.addf %v1, %v2 : f32"]
    view.set_text("\n".join(lines))
    assert navigator.index is None  # still building
    view.goto(len(lines), lines[-1].index("%v2") + 2)
    navigator.go_to_definition()
    qtbot.waitUntil(lambda: view.textCursor().blockNumber() + 1 == 2, timeout=30_000)  # %v2 = ... on line 2


def test_the_outline_of_the_last_text_is_greyed_out_until_the_new_one_comes(shown, qtbot):
    """After another text was set, the outline still listed the last text's rows, and a click on one
    jumped to that row's line in the new text."""
    view, navigator, outline = shown[0], shown[1], shown[2]
    first = "func.func @alpha() {\n  return\n}\n" + "\n" * 50 + "func.func @beta() {\n  return\n}\n"
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=30_000):
        view.set_text(first)
    assert outline.isEnabled() and outline.topLevelItemCount() >= 2
    view.set_text("func.func @gamma() {\n  return\n}\n")
    assert not outline.isEnabled()  # the rows of @alpha and @beta: not this text's
    qtbot.waitUntil(lambda: outline.isEnabled(), timeout=30_000)
    names = [outline.topLevelItem(i).data(0, QtCore.Qt.ItemDataRole.UserRole + 1)
             for i in range(outline.topLevelItemCount())]
    assert names == ["@gamma"]
