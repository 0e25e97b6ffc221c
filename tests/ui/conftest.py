"""The main window as the UI tests drive it: its own settings file, shown offscreen, jobs stopped after."""

from __future__ import annotations

import gc

import pytest
from PySide6 import QtCore


@pytest.fixture(autouse=True, scope="session")
def no_collection_on_worker_threads():
    """As in the app (ui/gui_gc.py): automatic collection off, so that a worker thread that allocates a lot
    (the IR navigation index) never triggers a collection that frees Qt objects off the GUI thread."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.fixture(autouse=True)
def collect_qt_garbage_on_the_main_thread():
    """Windows of earlier tests are cyclic garbage holding Qt objects. Collected here, on the main thread
    with no job running, never by a collection that a job's worker thread happens to trigger: there a
    QObject destructor waits for the GIL while the main thread, holding it, waits for that QObject's lock."""
    gc.collect()
    yield


@pytest.fixture
def window(qtbot, tmp_path):
    from npu_studio.ui.main_window import MainWindow

    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    # Active, as the window a user works in is: an X server gives the keyboard (and so the window's
    # shortcuts, Ctrl+R) only to the active window; the offscreen platform activates every shown one.
    w.activateWindow()
    qtbot.waitActive(w)
    yield w
    w.session.drafts.clear()  # closing the window would keep them in the workspace
    w.jobs.stop_all()
