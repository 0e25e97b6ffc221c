"""The real main window, driven as a user would: drop, click, select, cancel."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from PySide6 import QtCore, QtGui

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.ui.main_window import MainWindow

from ..conftest import EXAMPLE, light_zoo_models
from ..core.bad_models import write_bad_models
from ..core.test_compile import _compiler_processes_under


def drop(window, path: Path) -> None:
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(path))])
    pos = QtCore.QPointF(window.rect().center())
    actions = QtCore.Qt.DropAction.CopyAction
    enter = QtGui.QDragEnterEvent(pos.toPoint(), actions, mime, QtCore.Qt.MouseButton.LeftButton,
                                  QtCore.Qt.KeyboardModifier.NoModifier)
    QtCore.QCoreApplication.sendEvent(window, enter)
    assert enter.isAccepted(), "the window should accept this file"
    event = QtGui.QDropEvent(pos, actions, mime, QtCore.Qt.MouseButton.LeftButton,
                             QtCore.Qt.KeyboardModifier.NoModifier)
    QtCore.QCoreApplication.sendEvent(window, event)


def test_drop_example_compile_click_flow_and_select_dispatch(window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "home"))
    with qtbot.waitSignal(window.sig_index_finished, timeout=180_000):
        with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
            drop(window, EXAMPLE)
    assert done.args == [True]
    for phase in SNAPSHOT_PHASES:
        info = window.timeline.phase_info(phase)
        assert info.state == "done" and info.seconds is not None and info.size_bytes > 0

    rect = window.timeline.segment_rect("flow")
    qtbot.mouseClick(window.timeline, QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.current_phase == "flow"
    assert window.timeline.phase_info("flow").dispatches == 1
    assert "flow.executable" in window.ir_view.toPlainText()

    table = window.dispatch_table
    assert table.rowCount() == 1 and table.item(0, table.column("kind")).text() == "conv"
    assert table.item(0, table.column("ONNX")).text() == "Conv_0"
    window.ir_view.goto(1, 1)  # scroll away first
    qtbot.mouseClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=table.visualItemRect(table.item(0, 1)).center())
    assert window.selected_dispatch == 0
    assert window.ir_view.marked_key() == 0
    region = next(r for r in window.ir_view.regions() if r.key == 0)
    first, last = window.ir_view.visible_line_range()
    assert first <= region.start_line <= last
    assert "flow.executable" in window.ir_view.document().findBlockByNumber(region.start_line - 1).text()
    assert "N=1 C=3 H=500 W=500 F=8 KH=3 KW=3 OH=498 OW=498" in window.detail.toPlainText()

    # The selection follows the same dispatch into another phase.
    qtbot.keyClick(window.timeline, QtCore.Qt.Key.Key_Right)
    assert window.current_phase == "npu"  # the NPU phase follows flow
    assert window.dispatch_table.selected_dispatch() == 0
    # The NPU program is emitted off the GUI thread after the compile: its regions come when it is done.
    qtbot.waitUntil(lambda: window.ir_view.marked_key() == 0, timeout=60_000)

    # Arrow keys walk the timeline; the left arrow comes back.
    qtbot.keyClick(window.timeline, QtCore.Qt.Key.Key_Left)
    assert window.current_phase == "flow"


def test_cancel_mid_compile(window, qtbot, tmp_path):
    model = next(m for m in light_zoo_models() if "resnet50" in m.name)
    ws_dir = tmp_path / "ws"
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.open_path(model, ws_dir)
        qtbot.waitUntil(lambda: window.progress.value() >= 1, timeout=120_000)
        assert window.cancel_action.isEnabled()
        window.cancel_action.trigger()
    assert done.args == [False]
    assert window.status_label.text() == "Cancelled"
    assert _compiler_processes_under(ws_dir) == []
    assert not (ws_dir / "module.vmfb").exists()
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=10_000)
    assert window.compile_action.isEnabled()
    # The phases that had finished stay done, with their snapshots; the rest are pending.
    states = [window.timeline.phase_info(p).state for p in SNAPSHOT_PHASES]
    finished = states.count("done")
    assert finished >= 1 and states == ["done"] * finished + ["pending"] * (len(states) - finished)
    window.show_phase(SNAPSHOT_PHASES[0])
    assert window.current_phase == SNAPSHOT_PHASES[0]
    assert window.ir_view.text() == window.workspace.snapshot_path(SNAPSHOT_PHASES[0]).read_text() != ""


def test_dropping_a_corrupt_file_shows_the_error_and_the_app_goes_on(window, qtbot, tmp_path):
    bad = write_bad_models(tmp_path, EXAMPLE)["corrupt"]
    with qtbot.waitSignal(window.sig_compile_finished, timeout=60_000) as done:
        drop(window, bad)
    assert done.args == [False]
    assert window.error_banner.isVisible()
    assert str(bad) in window.error_banner.text()
    assert "corrupt or truncated" in window.error_banner.text()
    assert "Traceback" not in window.log.toPlainText()
    # Still usable: the example opens afterwards.
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.open_path(EXAMPLE, tmp_path / "ws")
    assert done.args == [True]
    assert not window.error_banner.isVisible()


def test_edit_flow_and_resume_keeps_the_edit_and_recompiles(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.open_path(EXAMPLE, tmp_path / "ws")
    window.show_phase("flow")
    window.edit_action.setChecked(True)
    assert window.ir_view.is_editable() and not window.ir_view.is_elided()
    text = window.ir_view.toPlainText().replace("arith.constant 0.000000e+00 : f32", "arith.constant 1.000000e+00 : f32", 1)
    window.ir_view.setPlainText(text)
    # Switching phase keeps the draft, coming back restores it.
    window.show_phase("stream")
    assert "flow" in window.drafts
    window.show_phase("flow")
    assert "arith.constant 1.000000e+00 : f32" in window.ir_view.toPlainText()
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.resume_action.trigger()
    assert done.args == [True]
    assert window.timeline.phase_info("flow").state == "edited"
    assert "arith.constant 1.000000e+00 : f32" in window.workspace.snapshot_path("flow").read_text()


def test_bad_edit_reports_file_line_col_and_keeps_the_text(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.open_path(EXAMPLE, tmp_path / "ws")
    qtbot.waitUntil(lambda: window.npu.state == "done", timeout=180_000)
    window.show_phase("flow")
    window.edit_action.setChecked(True)
    broken = window.ir_view.toPlainText().replace("linalg.fill", "linalg.fil", 1)
    window.ir_view.setPlainText(broken)
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.resume_action.trigger()
    assert done.args == [False]
    draft = window.workspace.draft_path("flow")  # the failed edit stays an edit
    assert f"{draft}:" in window.error_banner.text()
    assert draft.read_text() == broken  # nothing the user typed is lost
    assert "linalg.fil " not in window.workspace.snapshot_path("flow").read_text()  # the build stays
    assert window.ir_view.toPlainText() == broken
    assert window.timeline.phase_info("stream").state == "failed"
    assert window.timeline.phase_info("npu").state == "stale"  # built from the flow text the edit replaced


def test_uncompiled_edits_survive_closing_the_window(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    first = MainWindow(settings)
    qtbot.addWidget(first)
    with qtbot.waitSignal(first.sig_compile_finished, timeout=180_000):
        first.open_path(EXAMPLE, tmp_path / "ws")
    first.show_phase("stream")
    first.edit_action.setChecked(True)
    typed = first.ir_view.toPlainText() + "\n// a note the user typed\n"
    first.ir_view.setPlainText(typed)
    first.close()

    second = MainWindow(settings)
    qtbot.addWidget(second)
    second.open_path(tmp_path / "ws")
    assert second.timeline.phase_info("stream").state == "edited"
    second.show_phase("stream")
    assert second.ir_view.toPlainText() == typed
    assert second.ir_view.is_editable()


def test_clicking_a_diagnostic_in_the_log_jumps_there(window, qtbot, tmp_path):
    import re

    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.open_path(EXAMPLE, tmp_path / "ws")
    window.show_phase("flow")
    window.edit_action.setChecked(True)
    text = window.ir_view.toPlainText()
    line_no = next(i for i, ln in enumerate(text.splitlines(), 1) if "linalg.fill" in ln)
    window.ir_view.setPlainText(text.replace("linalg.fill", "linalg.fil", 1))
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.resume_action.trigger()
    window.show_phase("input")
    links = re.findall(r'href="(loc:[^"]+)"', window.log.toHtml())
    snapshot = str(window.workspace.draft_path("flow"))  # the failed edit, kept as a draft
    link = next(link for link in links if snapshot in link)
    window.log.anchorClicked.emit(QtCore.QUrl(link))
    assert window.current_phase == "flow"
    assert window.ir_view.textCursor().blockNumber() + 1 == line_no


def test_timeline_tooltip_summarises_the_phase(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.sig_index_finished, timeout=180_000):
        window.open_path(EXAMPLE, tmp_path / "ws")
    tip = window.timeline.tooltip_text("flow")
    assert "Dispatches: 1" in tip and "Executables: 1" in tip
    assert "linalg " in tip and "flow " in tip


def test_cancel_right_after_opening_stops_before_or_during_the_compile(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.sig_compile_finished, timeout=120_000) as done:
        window.open_path(EXAMPLE, tmp_path / "ws")
        window.cancel()  # still importing: no compile job exists yet
    assert done.args == [False]
    assert window.status_label.text() == "Cancelled"
    assert not (tmp_path / "ws" / "module.vmfb").exists()


def test_opening_another_model_clears_the_old_ones_views_at_once(window, qtbot, tmp_path, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=180_000):
        window.open_path(fresh_example.root)
    window.show_phase("flow")
    window.select_dispatch(0)
    assert window.ir_view.text() and window.dispatch_table.rowCount() == 1 and window.detail.toPlainText()
    other = tmp_path / "other_model.onnx"
    other.write_bytes(EXAMPLE.read_bytes())
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.open_path(other, tmp_path / "other_ws")
        # Before any event is processed: nothing of the old model is left on screen.
        assert window.windowTitle().startswith("other_model.onnx")
        assert window.ir_view.text() == "" and window.ir_view.regions() == []
        assert window.dispatch_table.rowCount() == 0 and window.detail.toPlainText() == ""
        assert "other_model.onnx" in window.phase_label.text()
        assert {window.timeline.phase_info(p).state for p in window.timeline.phases()} == {"pending"}
        assert window.workspace is None and window.selected_dispatch is None
        window.cancel()
