"""The module dock in the real main window: inspect, disassemble, go to the dispatch."""

from __future__ import annotations

import os
import shutil
import zipfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from .test_npu_in_app import WAIT, make_window, open_workspace


@pytest.fixture
def window(qtbot, tmp_path, fresh_example):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    open_workspace(w, qtbot, fresh_example)
    yield w
    w.jobs.stop_all()


def test_inspect_disassemble_and_go_to_dispatch(window, qtbot, fresh_example):
    dock = window.module_dock
    dock.inspect_action.trigger()
    qtbot.waitUntil(lambda: dock.contents is not None, timeout=WAIT)
    with zipfile.ZipFile(fresh_example.vmfb_path) as z:
        binaries = [i.filename for i in z.infolist() if i.filename.endswith(".so")]
    assert dock.executable_box.count() == len(binaries) == 1
    assert "SingleConv(!vm.ref<?>) -> (!vm.ref<?>)" in dock.text.toPlainText()
    if shutil.which("objdump") or shutil.which("llvm-objdump"):
        dock.disassemble_action.trigger()
        qtbot.waitUntil(lambda: "; dispatches #0" in dock.text.toPlainText(), timeout=WAIT)
    window.session.select_dispatch(None)
    dock.goto_action.trigger()
    assert window.session.selection.dispatch == 0
