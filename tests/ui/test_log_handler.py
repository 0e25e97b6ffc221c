"""The Log dock shows the `npu_studio` log records: one logged in a worker thread arrives in the
GUI thread, a warning in red, and the handler goes away with the panel."""

from __future__ import annotations

import logging
import threading

from PySide6 import QtCore, QtWidgets

from npu_studio.core import processes
from npu_studio.ui.log_handler import QtLogHandler, install_log_handler
from npu_studio.ui.log_panel import LogPanel

LOGGER = logging.getLogger("npu_studio.core.processes")


def _gui_thread():
    return QtWidgets.QApplication.instance().thread()


def test_a_record_from_a_worker_thread_arrives_in_the_gui_thread(qtbot):
    handler = QtLogHandler()
    got = []
    handler.sig_record.connect(lambda text, error: got.append((text, error, QtCore.QThread.currentThread())))
    LOGGER.addHandler(handler)
    old_level = LOGGER.level
    LOGGER.setLevel(logging.INFO)
    try:
        worker = threading.Thread(target=lambda: (LOGGER.info("Invoking %s", "tool 'a b'"),
                                                  LOGGER.warning("Killing tool")))
        worker.start()
        worker.join()
        assert got == []  # queued: nothing runs in the worker thread
        qtbot.waitUntil(lambda: len(got) == 2)
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(old_level)
    assert [(t, e) for t, e, _ in got] == [("Invoking tool 'a b'", False), ("Killing tool", True)]
    assert all(thread is _gui_thread() for _, _, thread in got)


def test_the_log_panel_shows_each_tool_run_once_and_lets_go_when_destroyed(qtbot):
    panel = LogPanel()
    qtbot.addWidget(panel)
    handler = install_log_handler(panel)
    package = logging.getLogger("npu_studio")
    assert handler in package.handlers
    done = []
    worker = threading.Thread(target=lambda: done.append(processes.run_child(["true", "$HOME x"])))
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: "Invoking" in panel.toPlainText())
    text = panel.toPlainText()
    assert text.count("Invoking true '$HOME x'") == 1, text
    assert "ended" not in text  # DEBUG records stay out of the dock
    panel.deleteLater()
    qtbot.waitUntil(lambda: handler not in package.handlers)
    LOGGER.warning("after the panel is gone")  # must not reach a deleted widget
