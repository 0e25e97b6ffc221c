"""A start paints the window first and restores the last workspace right after; the window's
modules load without IREE's bindings, pyqtgraph and the linalg op DSL (they cost the start).
(numpy still comes in through core/run/numeric_gate.py, which another change owns.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore  # noqa: E402

from npu_studio.ui.main_window import MainWindow  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_main_window_module_loads_none_of_the_heavy_libraries():
    code = ("import sys\nfrom PySide6 import QtWidgets\napp = QtWidgets.QApplication([])\n"
            "import npu_studio.ui.main_window\n"
            "heavy = ('iree.compiler', 'pyqtgraph', 'iree.compiler.dialects.linalg', 'onnx', 'yaml')\n"
            "print(' '.join(m for m in heavy if m in sys.modules) or 'none')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "none", out.stdout


def test_the_window_paints_before_the_last_workspace_is_restored(qtbot, tmp_path, fresh_example):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    settings.setValue("session/workspace", str(fresh_example.root))  # what the last close recorded
    settings.setValue("session/phase", "dispatch-creation")
    window = MainWindow(settings)
    qtbot.addWidget(window)
    at_first_paint = []

    class FirstPaint(QtCore.QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QtCore.QEvent.Type.Paint and not at_first_paint:
                at_first_paint.append((window.workspace, window.phase_label.text()))
            return False

    spy = FirstPaint()
    QtCore.QCoreApplication.instance().installEventFilter(spy)
    try:
        assert window.opener.restore_last_after_paint(settings)
        window.show()
        qtbot.waitUntil(lambda: window.workspace is not None and window.current_phase is not None, timeout=60_000)
    finally:
        QtCore.QCoreApplication.instance().removeEventFilter(spy)
    workspace, label = at_first_paint[0]
    assert workspace is None and f"{fresh_example.root.name}</b> — reopening…" in label  # painted first
    assert window.workspace.root == fresh_example.root and window.current_phase == "dispatch-creation"
    assert window.jobs.history.count("compile") == 0
    window.session.drafts.clear()
    window.jobs.stop_all()


def test_a_last_workspace_that_is_gone_leaves_the_first_screen(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    settings.setValue("session/workspace", str(tmp_path / "deleted"))
    window = MainWindow(settings)
    qtbot.addWidget(window)
    assert not window.opener.restore_last_after_paint(settings)
    window.show()
    assert window.pages.currentWidget() is window.welcome
