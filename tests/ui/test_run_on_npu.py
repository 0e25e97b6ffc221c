"""NPU > Run on NPU in the real main window: the verdict of `run --npu` in the log."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.npu.hal.plugin_build import CompilerMissing, find_cc
from npu_studio.ui.main_window import MainWindow

from .test_npu_in_app import WAIT, wait_npu


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.drafts.clear()
    w.jobs.stop_all()


def test_run_on_npu_logs_the_verdict(window, qtbot, fresh_example):
    try:
        find_cc()
    except CompilerMissing as exc:
        pytest.skip(f"no C compiler ({exc.reason})")
    window.open_path(fresh_example.root)
    wait_npu(window, qtbot)
    log: list[str] = []
    window.studio.sig_log.connect(lambda text, error: log.append(text))
    window.npu.run_on_npu_action.trigger()
    qtbot.waitUntil(lambda: log and log[-1] in ("OK", "MISMATCH"), timeout=WAIT)
    text = "\n".join(log)
    assert log[-1] == "OK" and "1 dispatches through the NPU plugin" in text and "vs onnxruntime" in text
    assert (fresh_example.root / "npu" / "hal" / "module.vmfb").is_file()
