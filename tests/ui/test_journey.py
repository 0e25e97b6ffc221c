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

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.core.debug.compile_profile import load_profile
from npu_studio.resources import TARGETS_DIR
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
    if screen.width() >= 1280:  # the smallest desktop (offscreen's 800 px screen: the dialog's own test)
        assert screen.contains(dialog.frameGeometry()), "the diff dialog does not fit the screen"
    changed = [line for line in dialog.view.unified_view.toPlainText().splitlines()
               if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))]
    assert [line[0] + " ".join(line[1:].split()) for line in changed] == [
        "-%6 = arith.addf %in, %in_1 : f32", "+%6 = arith.subf %in, %in_1 : f32"], changed
    day.shot("diff", dialog)
    day.key(dialog, Key.Key_Escape)
    assert not dialog.isVisible()

    # -- substitute an executable: dispatch #2's bias add made a subtract, built and checked ----------
    day.click_row(SUBSTITUTED, double=True)  # the row's "Open executable"
    panel = w.executables
    day.qtbot.waitUntil(lambda: panel.dock.isVisible() and panel.current_name() is not None, timeout=5000)
    assert panel.current_name().endswith(f"dispatch_{SUBSTITUTED}")
    editor = panel.editor
    day.click(editor.view.viewport())
    day.key(editor.view, Key.Key_F, CTRL)  # its own find
    assert editor.find_bar.isVisible() and not w.find_bar.isVisible()
    day.type(editor.find_bar.field, "arith.addf %in")
    day.key(editor.find_bar.field, Key.Key_Escape)
    at = editor.view.textCursor().selectionStart()
    day.shot("executable-found")
    day.double_click_text("addf", view=editor.view, after=at)
    day.type(editor.view, "subf")
    assert "arith.subf %in, %in_1" in editor.text() and "arith.addf %in" not in editor.text()
    if panel.time_check.isChecked():
        day.click(panel.time_check)  # no kernel timing today: the check is what matters
    assert not panel.time_check.isChecked()
    with day.qtbot.waitSignal(panel.sig_finished, timeout=180_000) as built:
        day.click(panel.substitute_button)
    assert built.args == [True]
    # The substituted build against the plain one: only the bias add's sign differs, so the largest
    # difference is twice the largest bias of that layer (read from the model file).
    bias = numpy_helper.to_array(next(t for t in onnx.load(str(model)).graph.initializer
                                      if t.name == f"b{SUBSTITUTED}"))
    assert "FAIL" in panel.verdict.text()
    assert float(panel.results.item(0, 2).text()) == pytest.approx(2 * np.abs(bias).max(), rel=1e-5)
    assert panel.decision.isVisible() and w.error_banner.isVisible()  # never kept silently
    day.shot("substituted")
    day.click(panel.keep_button)  # the user keeps it on, knowingly
    day.settle()
    assert not panel.decision.isVisible() and not w.error_banner.isVisible()
    build_line, _ = w.build_summary.texts()
    assert f"dispatch_{SUBSTITUTED}" in build_line and "edited" in build_line, build_line

    # -- edit the NPU target: rows 32 -> 8, applied; the summary names the target and the changed key --
    day.press(w.npu.edit_action)
    target = w.npu.editor
    day.qtbot.waitUntil(lambda: w.npu.dock.isVisible(), timeout=5000)
    text = target.edit.toPlainText()
    day.double_click_text("32", view=target.edit, after=text.index("rows = 32"))
    assert target.edit.textCursor().selectedText() == "32"
    day.type(target.edit, "8")
    cycles_before = w.schedule.chart.model.totals.cycles
    with day.qtbot.waitSignal(w.npu.sig_finished, timeout=120_000) as ran:
        day.click(target.apply_button)
    assert ran.args == [True]
    day.settle()
    saved = w.npu.target_path()
    # This model's own copy of the target (recorded in its workspace) took the edit; the bundled file did not.
    assert saved == w.workspace.root / "npu" / "target.toml" and "\nrows = 8\n" in saved.read_text()
    assert "\nrows = 32\n" in (TARGETS_DIR / "default.toml").read_text()
    _, target_line = w.build_summary.texts()
    assert target_line == ("NPU target default (recorded in this workspace): 1 key changed from bundled default: "
                           "mac_array.rows 32 → 8")
    assert w.npu.picker.currentText() == "default (recorded in this workspace)"  # the toolbar says the same
    assert w.schedule.chart.model.totals.cycles != cycles_before  # the schedule was planned again on 8 rows
    day.shot("target-edited")

    # -- read the Gantt: hover a bar (its tooltip stays while the pointer rests), click it ----------
    day.click_phase("flow")
    schedule = w.schedule
    day.show_dock(schedule)
    day.qtbot.wait(100)  # laid out at its readable size
    chart, gantt = schedule.chart, schedule.chart.model
    # The substitution's rebuild kept dispatch #2 selected, so the chart shows it close up: Home
    # brings the whole schedule back, as a user does to pick another dispatch's bar.
    day.key(chart, QtCore.Qt.Key.Key_Home)
    before = w.selected_dispatch
    picked = next(d for d in (0, 2, 1) if d != before)
    bar = next(i for i, task in enumerate(gantt.bar_task.tolist())
               if gantt.task_dispatch[task] == picked and gantt.bar_kind[i] == "compute")
    task = int(gantt.bar_task[bar])
    scene = chart.engines.getViewBox().mapViewToScene(
        QtCore.QPointF((gantt.bar_start[bar] + gantt.bar_end[bar]) / 2, float(gantt.bar_engine[bar])))
    port = chart.view.viewport()
    at = chart.view.mapFromScene(scene)
    assert port.rect().contains(at), "the bar is not on screen"
    day.focus_window(port)
    day.qtbot.mouseMove(port, at + QtCore.QPoint(0, 40))  # the pointer comes from below, onto the bar
    day.qtbot.mouseMove(port, at)
    tip = QtWidgets.QToolTip
    day.qtbot.waitUntil(lambda: tip.isVisible() and tip.text().startswith(f"task #{task} "), timeout=5000)
    day.qtbot.wait(2000)  # resting on the bar
    assert tip.isVisible() and tip.text().startswith(f"task #{task} "), "the tooltip went while the pointer rests"
    assert f"dispatch #{picked} " in tip.text()
    day.screen_shot("gantt-tooltip") or day.shot("gantt-tooltip")
    day.click(port, at)
    assert w.selected_dispatch == picked and table.selected_dispatch() == picked  # the selection follows
    assert view.marked_key() == picked
    assert day.line_visible(next(r for r in view.regions() if r.key == picked).start_line)  # shown in the IR
    day.shot("gantt-clicked")

    # -- trace the numerics against ONNX: the edited dispatch is the first to depart -----------------
    day.show_dock(w.trace_dock)
    day.press(w.trace_dock.trace_action)
    day.qtbot.waitUntil(lambda: w.trace.report is not None, timeout=120_000)
    day.settle()
    assert w.trace.report.first_divergent.index == EDITED
    column = table.column("vs ONNX")
    verdicts = {d: table.item(day.row_of(d), column).text() for d in range(3)}
    assert not verdicts[0].startswith("DEPARTS") and verdicts[EDITED].startswith("DEPARTS"), verdicts
    assert w.selected_dispatch == EDITED and f"First divergent dispatch: #{EDITED}" in w.trace_dock.status.text()
    day.shot("traced")

    # -- record a compile profile: its passes in the dock, the top pass on the timeline --------------
    profile = w.compile_profile
    day.show_dock(profile.dock)
    with day.qtbot.waitSignal(profile.sig_recorded, timeout=180_000):
        day.click(profile.record_button)
    day.qtbot.waitUntil(lambda: not profile.is_busy(), timeout=30_000)
    day.settle()
    recorded = load_profile(w.workspace)
    assert recorded is not None and profile.table.rowCount() > 0
    top = recorded.phases["hal"].passes[0]
    assert f"Top pass: {top.name}" in w.timeline.tooltip_text("hal")
    day.shot("profiled")

    # -- quit (File > Quit) and relaunch on the same settings: the workspace comes back as it was left --
    root, phase, selected = w.workspace.root, w.current_phase, w.selected_dispatch
    day.menu("File", "Quit")  # (Ctrl+Q where the platform binds it: X11 does, offscreen does not)
    day.qtbot.waitUntil(lambda: not w.isVisible(), timeout=10_000)
    w = day.relaunch()
    day.qtbot.waitUntil(lambda: w.workspace is not None and "flow" in w.indexes, timeout=120_000)
    day.settle()
    assert w.workspace.root == root and w.current_phase == phase and w.selected_dispatch == selected
    view, table = w.ir_view, w.dispatch_table
    assert view.text() == fixed and "arith.subf %in, %in_1" in view.text()  # the edit, as compiled
    assert table.selected_dispatch() == selected and view.marked_key() == selected
    assert day.line_visible(next(r for r in view.regions() if r.key == selected).start_line)
    build_line, target_line = w.build_summary.texts()
    assert "edited flow" in build_line and f"dispatch_{SUBSTITUTED}" in build_line and "kept on" in build_line
    assert target_line.endswith("mac_array.rows 32 → 8") and w.npu.picker.currentText() == target_line.split(
        "NPU target ")[1].split(":")[0]
    assert f"Top pass: {top.name}" in w.timeline.tooltip_text("hal")  # the profile too
    assert not w.error_banner.isVisible(), w.error_banner.text()
    day.shot("relaunched")

    # -- reopen from File > Open Recent: the model is unchanged, its workspace reopens, nothing compiles --
    flow_written = flow_file.stat().st_mtime_ns
    assert w.recent_files()[0] == str(model)
    day.menu("File", "Open Recent", model.name)
    day.qtbot.waitUntil(lambda: w.workspace is not None and "flow" in w.indexes, timeout=120_000)
    day.settle()
    assert w.workspace.root == root and flow_file.stat().st_mtime_ns == flow_written
    assert "arith.subf %in, %in_1" in w.workspace.snapshot_path("flow").read_text()
    assert str(root) in w.status_label.text() and not w.error_banner.isVisible()
    day.shot("reopened-from-recent")

    # -- open a bad file: one banner naming it, the open model stays ---------------------------------
    day.click_row(EDITED)  # at work on dispatch #1
    bad = tmp_path / "models" / "broken.onnx"
    bad.write_bytes(b"\x08\x07not a protobuf at all" * 8)
    day.open_with_dialog(bad)
    day.settle()
    assert w.error_banner.isVisible() and str(bad) in w.error_banner.text(), w.error_banner.text()
    banners = [b for b in w.findChildren(QtWidgets.QLabel)
               if b.isVisible() and b is not w.error_banner and str(bad) in b.text()]
    assert banners == [], "the failure is said more than once"
    assert w.workspace is not None and w.workspace.root == root and w.windowTitle().startswith("mlp.onnx")
    assert "arith.subf %in, %in_1" in w.ir_view.text() and w.dispatch_table.rowCount() == 3
    assert w.recent_files()[0] == str(model)  # what did not open is not recent
    assert w.current_phase == "flow" and w.selected_dispatch == EDITED  # where the user was
    assert day.line_visible(next(r for r in w.ir_view.regions() if r.key == EDITED).start_line)
    day.shot("bad-file")

    elapsed = time.monotonic() - started
    assert elapsed < 90, f"the day took {elapsed:.0f} s"
    print(f"journey: {elapsed:.1f} s")
