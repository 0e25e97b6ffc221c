"""The `npu_studio` log records in the Log dock: every tool the app starts, with its command line.

Records come from whichever thread logged them (compiles and runs happen in
worker threads); the handler posts each one as a queued signal, so what listens
to `sig_record` always runs in the GUI thread.
"""

from __future__ import annotations

import logging

from PySide6 import QtCore

from ..verbosity import PACKAGE_LOGGER


class _Relay(QtCore.QObject):
    """Lives in the GUI thread; a record posted from any thread is re-emitted there."""

    sig_record = QtCore.Signal(str, bool)  # text, whether it is an error (WARNING and above)
    _sig_posted = QtCore.Signal(str, bool)  # the same, from the logging thread

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._sig_posted.connect(self.sig_record, QtCore.Qt.ConnectionType.QueuedConnection)


class QtLogHandler(logging.Handler):
    """A logging handler whose records arrive as `sig_record(text, is_error)` in the GUI thread.

    Create it in the GUI thread; `parent` owns its relay object (the panel it feeds)."""

    def __init__(self, level: int = logging.INFO, parent: QtCore.QObject | None = None):
        super().__init__(level)
        self.setFormatter(logging.Formatter("%(message)s"))
        self._relay = _Relay(parent)

    @property
    def sig_record(self) -> QtCore.SignalInstance:
        return self._relay.sig_record

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # a bad %-format in some log call: logging's own report, never a crash
            self.handleError(record)
            return
        try:
            self._relay._sig_posted.emit(text, record.levelno >= logging.WARNING)
        except RuntimeError:  # the panel (and the relay with it) is gone; the handler is being removed
            pass


def install_log_handler(log_panel) -> QtLogHandler:
    """Show the `npu_studio` records of INFO and above in `log_panel` (a LogPanel) until it is destroyed."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    handler = QtLogHandler(logging.INFO, parent=log_panel)
    handler.sig_record.connect(lambda text, error: log_panel.append_text(text, error=error))
    level = logger.level
    if level == logging.NOTSET or level > logging.INFO:
        logger.setLevel(logging.INFO)  # the records must get past the logger to reach the handler
    logger.addHandler(handler)

    def remove(*_):
        logger.removeHandler(handler)
        if logger.level == logging.INFO and not any(isinstance(h, QtLogHandler) for h in logger.handlers):
            logger.setLevel(level)

    log_panel.destroyed.connect(remove)
    return handler
