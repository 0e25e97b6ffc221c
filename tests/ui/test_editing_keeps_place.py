"""Editing keeps the user's place: undo per phase across phase switches, Edit IR and Replace All
keep the cursor, Ctrl+F finds in the focused editor."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui, QtWidgets


def open_ws(window, qtbot, ws):
    with qtbot.waitSignal(window.sig_index_finished, timeout=60_000):
        window.open_path(ws.root)


def test_undo_survives_a_phase_switch(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    original = fresh_example.snapshot_path("flow").read_text()
    window.show_phase("flow")
    window.edit_action.setChecked(True)
    view = window.ir_view
    view.goto(3, 1)
    qtbot.keyClicks(view, "// typed by me")
    edited = view.text()
    assert edited != original
    window.show_phase("dispatch-creation")  # away: the edit is stashed as a draft
    assert window.drafts["flow"] == edited
    window.show_phase("flow")  # and back
    assert view.text() == edited
    assert view.textCursor().blockNumber() == 2  # the cursor where it was
    assert view.document().isUndoAvailable()
    while view.document().isUndoAvailable():
        view.undo()
    assert view.text() == original


def test_edit_ir_keeps_the_scroll_and_cursor_line(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    window.show_phase("flow")
    view = window.ir_view
    view.resize(600, 120)
    view.goto(30, 1)
    line, scroll = view.textCursor().blockNumber(), view.verticalScrollBar().value()
    assert line == 29 and scroll > 0
    window.edit_action.setChecked(True)
    assert view.is_editable()
    assert view.textCursor().blockNumber() == line and view.verticalScrollBar().value() == scroll


def test_undo_of_replace_all_goes_back_to_the_replacements_not_the_end(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    window.show_phase("flow")
    window.edit_action.setChecked(True)
    view = window.ir_view
    before = view.text()
    window.find_bar.open()
    window.find_bar.field.setText("arith.mulf")
    bar = window.edit_controller.replace_bar
    bar.field.setText("arith.addf")
    assert bar.replace_all() == before.count("arith.mulf") >= 1
    assert view.text() == before.replace("arith.mulf", "arith.addf")
    view.undo()  # one step
    assert view.text() == before
    first = before.index("arith.mulf")
    last_block = view.document().blockCount() - 1
    assert view.textCursor().blockNumber() < last_block  # not thrown to the end of the file
    assert abs(view.textCursor().position() - first) <= len("arith.mulf") + 1


def test_ctrl_f_finds_in_the_focused_editor(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    window.executables.dock.show()
    window.activateWindow()  # keys go to the active window (a real X server has one)
    qtbot.waitActive(window)
    editor = window.executables.editor
    editor.view.setFocus()
    qtbot.waitUntil(editor.view.hasFocus, timeout=2000)
    QtCore.QCoreApplication.processEvents()
    qtbot.keyClick(editor.view, QtCore.Qt.Key.Key_F, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert editor.find_bar.isVisible() and not window.find_bar.isVisible()
    window.ir_view.setFocus()
    qtbot.waitUntil(window.ir_view.hasFocus, timeout=2000)
    qtbot.keyClick(window.ir_view, QtCore.Qt.Key.Key_F, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.find_bar.isVisible()
    assert QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Find).matches(
        QtGui.QKeySequence("Ctrl+F")) == QtGui.QKeySequence.SequenceMatch.ExactMatch


def test_a_rebuild_shows_the_phase_at_the_same_place(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    window.show_phase("flow")
    view = window.ir_view
    view.resize(600, 120)
    view.goto(25, 4)
    scroll = view.verticalScrollBar().value()
    assert scroll > 0
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.recompile()
    assert done.args == [True]
    assert window.current_phase == "flow"
    assert view.textCursor().blockNumber() == 24 and view.textCursor().positionInBlock() == 3
    assert view.verticalScrollBar().value() == scroll


def test_the_executable_editor_keeps_its_selection_when_its_text_comes_again(qtbot):
    from npu_studio.ui.executables.editor import ExecutableEditor

    editor = ExecutableEditor()
    qtbot.addWidget(editor)
    text = "".join(f"line {i}\n" for i in range(200))
    editor.set_text("@exe", text)
    cursor = editor.view.textCursor()
    cursor.setPosition(text.index("line 120"))
    cursor.setPosition(text.index("line 121"), QtGui.QTextCursor.MoveMode.KeepAnchor)
    editor.view.setTextCursor(cursor)
    editor.set_text("@exe", text.replace("line 5\n", "line five\n"))  # rebuilt: the dump changed a little
    assert editor.view.textCursor().selectedText() == "line 120\u2029"  # Qt's paragraph separator
    editor.set_text("@other", text)  # another executable starts at the top
    assert editor.view.textCursor().position() == 0


def _click_line(qtbot, view, line: int, double: bool = False) -> None:
    rect = view.cursorRect(QtGui.QTextCursor(view.document().findBlockByNumber(line - 1)))
    pos = rect.center() + QtCore.QPoint(view.fontMetrics().horizontalAdvance("    %"), 0)
    if double:
        qtbot.mouseDClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    else:
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)


def test_a_click_in_the_ir_selects_its_dispatch_without_moving_the_view(window, qtbot, fresh_example):
    open_ws(window, qtbot, fresh_example)
    window.show_phase("flow")
    view = window.ir_view
    view.resize(700, 200)
    (region,) = view.regions()
    assert region.end_line - region.start_line > 8, "the example's dispatch spans many lines"
    for editing in (False, True):
        window.select_dispatch(None)
        window.edit_action.setChecked(editing)
        assert view.document().defaultFont() == view.font()  # edit mode keeps the font and its metrics
        view.goto(region.end_line - 1, 1, center=False)  # scrolled so that the region's end is on screen
        # laid out, as on screen before a user clicks, and not the third click of the last double-click
        qtbot.wait(QtWidgets.QApplication.doubleClickInterval() + 50)
        qtbot.waitUntil(lambda: not window.ir.navigator.building, timeout=60_000)  # folds settled
        first, last = view.visible_line_range()
        assert first > region.start_line
        scroll, target = view.verticalScrollBar().value(), (first + last) // 2
        while not view.document().findBlockByNumber(target - 1).isVisible():  # a line on show, not a folded one
            target -= 1
        _click_line(qtbot, view, target)
        assert window.selected_dispatch == region.key and view.marked_key() == region.key
        assert view.verticalScrollBar().value() == scroll  # nothing jumped
        assert view.textCursor().blockNumber() == target - 1  # the cursor where the click was
        _click_line(qtbot, view, target, double=True)  # the dispatch already selected: still no jump
        assert view.verticalScrollBar().value() == scroll
        assert view.textCursor().blockNumber() == target - 1
    window.edit_action.setChecked(False)
