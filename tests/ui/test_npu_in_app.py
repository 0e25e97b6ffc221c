"""The NPU backend in the real main window: npu phase, table columns, target."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.npu.target import target_store
from npu_studio.core.npu.store import workspace_io
from npu_studio.core.workspace.workspace import Workspace
from npu_studio.resources import TARGETS_DIR
from npu_studio.ui.main_window import MainWindow
from npu_studio.core.npu_columns import HEADERS
from npu_studio.core.session import NPU_PHASE
from npu_studio.ui.npu.panel import SETTINGS_KEY

from ..conftest import EXAMPLE

WAIT = 180_000


def make_window(qtbot, settings):
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


@pytest.fixture
def settings(tmp_path):
    return QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    w = make_window(qtbot, settings)
    yield w
    w.drafts.clear()
    w.jobs.stop_all()


def cell(window, header: str, row: int = 0) -> str:
    t = window.dispatch_table
    return t.item(row, t.column(header)).text()


def wait_npu(window, qtbot, state="done"):
    qtbot.waitUntil(lambda: window.npu.state == state and not window.npu.is_running()
                    and "flow" in window.indexes, timeout=WAIT)


def open_workspace(window, qtbot, ws):
    window.open_path(ws.root)
    wait_npu(window, qtbot)
    window.show_phase("flow")


def test_npu_phase_after_flow_becomes_done_and_shows_the_npu_ir(window, qtbot, tmp_path):
    assert window.timeline.phases()[window.timeline.phases().index("flow") + 1] == NPU_PHASE
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT) as done:
        window.open_path(EXAMPLE, tmp_path / "ws")
    assert done.args == [True]
    wait_npu(window, qtbot)
    info = window.timeline.phase_info(NPU_PHASE)
    assert info.state == "done" and info.seconds is not None and info.size_bytes > 0
    assert info.dispatches == 1
    ws = window.workspace
    assert workspace_io.json_path(ws).is_file() and workspace_io.mlir_path(ws).is_file()

    window.show_phase("flow")
    table = window.dispatch_table
    assert table.extra_headers() == HEADERS
    assert cell(window, "NPU") == "NPU mac" and cell(window, "reason") == ""
    # the tile the program in the workspace holds, as the table spells it
    (conv,) = json.loads(workspace_io.json_path(ws).read_text())["dispatches"]
    tile = " ".join(f"{d}{s}" for d, s in zip(conv["loop_dims"], conv["tile_sizes"]))
    assert tile.startswith("F8 OH") and tile.endswith(" C3 KH3 KW3")
    assert cell(window, "tile") == tile
    assert cell(window, "SRAM").endswith(("KiB", "MiB"))
    assert cell(window, "ONNX") == "Conv_0" and cell(window, "kind") == "conv"
    # At the default window size the NPU columns are in view, SRAM included (offscreen the screen is
    # smaller than the default, and the window shrinks to fit it: size it as on a desktop).
    window.resize(1400, 900)
    qtbot.wait(20)
    sram = table.column("SRAM")
    assert table.columnViewportPosition(sram) + table.columnWidth(sram) <= table.viewport().width()
    qtbot.mouseClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=table.visualItemRect(table.item(0, 1)).center())
    detail = window.detail.toPlainText()
    assert "conv -> NPU" in detail and f"tile: {tile} ({conv['num_tiles']} tiles)" in detail
    assert "Conv_0" in detail  # the flow record follows

    qtbot.mouseClick(window.timeline, QtCore.Qt.MouseButton.LeftButton,
                     pos=window.timeline.segment_rect(NPU_PHASE).center())
    assert window.current_phase == NPU_PHASE
    text = window.ir_view.toPlainText()
    assert '"npu.conv"' in text and text == workspace_io.mlir_path(ws).read_text()
    assert not window.ir_view.is_editable() and not window.edit_action.isEnabled()
    assert not window.resume_action.isEnabled()
    assert table.extra_headers() == HEADERS and cell(window, "NPU") == "NPU mac"
    # Dispatch #0's tasks are tinted and marked.
    region = next(r for r in window.ir_view.regions() if r.key == 0)
    assert window.ir_view.marked_key() == 0
    lines = text.splitlines()
    assert '"npu.conv"' in lines[region.start_line - 1]
    assert sum(1 for s in lines[region.start_line - 1:region.end_line] if s.startswith("  %t")) == conv["num_tiles"]
    # Other phases keep the same columns (the table does not change shape), the NPU ones empty.
    qtbot.keyClick(window.timeline, QtCore.Qt.Key.Key_Right)
    assert window.current_phase == "stream" and table.extra_headers() == HEADERS
    assert cell(window, "NPU") == "" and cell(window, "tile") == ""
    assert "-> NPU" not in window.detail.toPlainText()


def test_target_tiny_turns_dispatch_0_into_cpu_fallback(window, qtbot, settings, fresh_example):
    open_workspace(window, qtbot, fresh_example)
    assert cell(window, "NPU") == "NPU mac"
    window.select_dispatch(0)
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT):
        window.npu.set_target(TARGETS_DIR / "tiny.toml")
    assert cell(window, "NPU") == "CPU"
    assert "f32" in cell(window, "reason") and cell(window, "tile") == ""
    assert "CPU fallback: element type not supported (f32 in input 0)" in window.detail.toPlainText()
    assert window.timeline.phase_info(NPU_PHASE).dispatches == 0
    # the coverage: NPU against total, and the fallbacks grouped by rule
    assert "0 of 1 dispatches on the NPU, 0.00% of " in window.session.phase_view(NPU_PHASE).label
    assert "1 on the CPU by rule dtype" in window.log.toPlainText()
    assert '"npu.fallback"' in workspace_io.mlir_path(fresh_example).read_text()
    assert settings.value(SETTINGS_KEY) == str(TARGETS_DIR / "tiny.toml")


def test_target_choice_is_remembered(qtbot, settings):
    settings.setValue(SETTINGS_KEY, str(TARGETS_DIR / "tiny.toml"))
    w = make_window(qtbot, settings)
    assert w.npu.target_path() == TARGETS_DIR / "tiny.toml"
    settings.setValue(SETTINGS_KEY, "/no/such/target.toml")
    w2 = make_window(qtbot, settings)
    assert w2.npu.target_path() == TARGETS_DIR / "default.toml"


def test_editing_the_target(window, qtbot, fresh_example):
    default = TARGETS_DIR / "default.toml"
    original = default.read_text()
    open_workspace(window, qtbot, fresh_example)
    window.npu.edit_target()
    editor = window.npu.editor
    assert window.npu.dock.isVisible() and editor.text() == original

    # Invalid: the banner names file, line and key; the text and the old results stay.
    bad = original.replace("rows = 32", "rows = -32")
    editor.set_text(bad)
    qtbot.mouseClick(editor.apply_button, QtCore.Qt.MouseButton.LeftButton)
    banner = window.error_banner.text()
    assert window.error_banner.isVisible()
    assert f"{default}:11: mac_array.rows: -32 is out of range: expected an integer from 1 to 4,096" == banner
    assert editor.text() == bad
    assert window.npu.state == "stale" and window.timeline.phase_info(NPU_PHASE).state == "stale"
    assert cell(window, "NPU") == "NPU mac"
    assert default.read_text() == original

    # Valid: saved as a named user target (never into resources), re-run.
    good = original.replace('supported = ["f32", "f16", "bf16", "i8"]', 'supported = ["f16", "i8"]')
    editor.set_text(good)
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT):
        editor.apply()
    copy = target_store.user_targets_dir() / "default-edited.toml"
    assert copy.read_text() == good and default.read_text() == original
    assert window.npu.target_path() == copy and editor.path() == copy
    assert not window.error_banner.isVisible()
    assert window.npu.state == "done" and cell(window, "NPU") == "CPU"
    assert "f32" in cell(window, "reason")
    assert editor.text() == good

    # A syntax error names its line too.
    editor.set_text(good.replace("lanes = 64", "lanes = = 64"))
    editor.apply()
    assert f"{copy}:" in window.error_banner.text() and "<syntax>" in window.error_banner.text()
    assert copy.read_text() == good


def test_an_edited_target_is_a_named_user_target_and_each_model_keeps_its_own(window, qtbot, fresh_example,
                                                                              example_workspace, tmp_path):
    import shutil

    picker = window.npu.picker
    open_workspace(window, qtbot, fresh_example)
    assert picker.currentText() == "default (bundled)"
    window.npu.edit_target()
    edited = window.npu.editor.text().replace('name = "npu-mid"', 'name = "npu-edited"')
    window.npu.editor.set_text(edited)
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT):
        window.npu.editor.apply()
    labels = [picker.itemText(i) for i in range(picker.count())]
    assert labels == ["default (bundled)", "tiny (bundled)", "default-edited (user)"]
    assert picker.currentText() == "default-edited (user)"
    window.show_phase(NPU_PHASE)
    assert "built with default-edited (user)" in window.phase_label.text()

    # A second model opened now uses the app's choice (the user target), then is switched to tiny.
    second = tmp_path / "second"
    shutil.copytree(example_workspace.root, second)
    window.open_path(second)
    wait_npu(window, qtbot)
    assert picker.currentText() == "default-edited (user)"  # the app's choice, not the first model's copy
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT):
        picker.activated.emit(picker.findText("tiny (bundled)"))
    window.show_phase(NPU_PHASE)
    assert "built with tiny (bundled)" in window.phase_label.text()

    # Reopening each workspace shows the target it was built with, whatever the app now uses.
    open_workspace(window, qtbot, fresh_example)
    assert picker.currentText() == "default-edited (recorded in this workspace)"
    window.show_phase(NPU_PHASE)
    assert "built with default-edited (recorded in this workspace)" in window.phase_label.text() and window.npu.state == "done"
    open_workspace(window, qtbot, Workspace.open(second))
    assert picker.currentText() == "tiny (recorded in this workspace)"
