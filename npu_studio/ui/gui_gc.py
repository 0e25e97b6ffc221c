"""Cyclic garbage collection on the GUI thread only.

A collection that a worker thread happens to trigger can free Qt objects there: the QObject
destructor then waits for a Qt lock that the GUI thread holds while it waits for the GIL, and the
app hangs (seen in the X11 test run). Automatic collection is switched off and the GUI thread
collects on a timer, by generation, as the interpreter would.

pyqtgraph ships the same idea (`pyqtgraph.util.garbage_collector`), but importing pyqtgraph costs
start-up time the first window should not pay, and these few lines need nothing from it.
"""

from __future__ import annotations

import gc

from PySide6 import QtCore


class GuiThreadCollector(QtCore.QObject):
    """Owns the timer; keep it alive as long as the application."""

    def __init__(self, parent: QtCore.QObject, interval_ms: int = 1000):
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QtCore.QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(interval_ms)

    def collect_due(self) -> int:
        """Collect the generations whose counts passed their thresholds; returns the oldest collected (-1: none)."""
        counts = gc.get_count()
        oldest = -1
        for generation in range(3):
            if counts[generation] <= self._thresholds[generation]:
                break
            oldest = generation
        if oldest >= 0:
            gc.collect(oldest)
        return oldest

    def stop(self) -> None:
        self._timer.stop()
        gc.enable()
