"""Run core work off the GUI thread and hand results back as signals."""

from __future__ import annotations

import traceback
from typing import Any, Callable

from PySide6 import QtCore


class Worker(QtCore.QThread):
    """Runs `fn(report)` in a thread; `report(*args)` forwards progress to the GUI thread.

    `cancel` (optional) is called from the GUI thread to stop the work; the
    thread then ends with whatever exception `fn` raises (e.g. Cancelled).
    """

    sig_progress = QtCore.Signal(object)  # whatever fn passed to report(), as a tuple
    sig_done = QtCore.Signal(object)  # fn's return value
    sig_failed = QtCore.Signal(object, str)  # exception, formatted traceback

    def __init__(self, fn: Callable[[Callable[..., None]], Any], cancel: Callable[[], None] | None = None,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._fn = fn
        self._cancel = cancel

    def run(self) -> None:  # runs in the worker thread
        try:
            result = self._fn(lambda *args: self.sig_progress.emit(args))
        except Exception as exc:  # handed to the GUI, which shows it
            self.sig_failed.emit(exc, traceback.format_exc())
        else:
            self.sig_done.emit(result)

    def cancel(self) -> None:
        if self._cancel is not None:
            self._cancel()
