"""The main window as the UI tests drive it: its own settings file, shown offscreen, jobs stopped after."""

from __future__ import annotations

import pytest
from PySide6 import QtCore


@pytest.fixture
def window(qtbot, tmp_path):
    from npu_studio.ui.main_window import MainWindow

    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.session.drafts.clear()  # closing the window would keep them in the workspace
    w.jobs.stop_all()
