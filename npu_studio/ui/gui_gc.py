"""Cyclic garbage collection on the GUI thread only.

A collection that a worker thread happens to trigger can free Qt objects there: the QObject
destructor then waits for a Qt lock that the GUI thread holds while it waits for the GIL, and the
app hangs (seen in the X11 test run). Automatic collection is switched off and the GUI thread
collects on a timer, by generation, as the interpreter would.

pyqtgraph ships the same idea (`pyqtgraph.util.garbage_collector`), but importing pyqtgraph costs
start-up time the first window should not pay, and these few lines need nothing from it.

A worker building a large structure of long-lived objects (the IR view's navigation index: about a
million) wraps the build in `long_lived_build()`: the collector waits meanwhile, and the structure is
then frozen out of collections (`gc.freeze`). Otherwise the next collection would walk all of it on the
GUI thread, a one-second stall, and do so again at every full collection. Frozen objects without
reference cycles are still freed by reference counting when dropped (the index has none).
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

from PySide6 import QtCore

_builds = 0  # long-lived builds under way
_builds_lock = threading.Lock()


@contextmanager
def long_lived_build():
    """Hold the GUI-thread collections while the block builds long-lived objects, then freeze them."""
    global _builds
    with _builds_lock:
        _builds += 1
    try:
        yield
    finally:
        with _builds_lock:
            _builds -= 1
            freeze_long_lived()


def freeze_long_lived() -> None:
    """Everything alive now leaves the collected generations (a structure just built, see the module doc)."""
    gc.freeze()


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
        if _builds:
            return -1  # a build is under way: its objects get frozen, not walked (module doc)
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
