"""Parameter references in the IR view: a tooltip with name, shape, type and size; statistics on request.

`install_parameter_view(view, archive_path)` hooks an IrView through an
event filter (no subclassing): hovering `#stream.parameter.named<...>`
shows what it stands for, and the context menu over it offers the
parameter's statistics (min, max, mean, std, a histogram), computed off the
GUI thread from the workspace's archive and cancelled when the dialog closes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from ...core.compile.param_refs import ParamRef, as_float, declared_types, ref_at
from ...core.compile.params import ParameterArchive, ParamStats, StatsCancelled, stats
from ...core.errors import StudioError
from .utf16 import from_utf16

ArchivePath = Callable[[], "Path | None"]


class _StatsWorker(QtCore.QObject):
    sig_done = QtCore.Signal(object)  # ParamStats
    sig_failed = QtCore.Signal(str)  # one-line reason

    def __init__(self, archive: Path, ref: ParamRef, shape, element_type: str):
        super().__init__()
        self.archive, self.ref, self.shape, self.element_type = archive, ref, shape, element_type
        self.cancel = threading.Event()

    def run(self) -> None:
        from ...core.dtypes import numpy_storage_dtype

        try:
            values = ParameterArchive(self.archive).array(self.ref.key, self.shape,
                                                          numpy_storage_dtype(self.element_type))
            result = stats(values, convert=lambda part: as_float(part, self.element_type),
                           cancelled=self.cancel.is_set)
        except StatsCancelled:
            return
        except (StudioError, KeyError, ValueError) as exc:
            self.sig_failed.emit(str(exc))
            return
        self.sig_done.emit(result)


class ParameterStatsDialog(QtWidgets.QDialog):
    """Statistics of one parameter; the computation runs in a thread and stops when the dialog closes."""

    sig_ready = QtCore.Signal()  # statistics shown (for tests and callers)

    def __init__(self, archive: Path, ref: ParamRef, shape, element_type: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"Parameter {ref.key}")
        self.resize(520, 380)
        self.summary = QtWidgets.QLabel(f"{ref.describe()}\nComputing statistics…")
        self.summary.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        from ..plot_theme import plot_widget  # here, not at the top: pyqtgraph costs the window's start a second

        self.plot = plot_widget()
        self.plot.setLabel("bottom", "value")
        self.plot.setLabel("left", "count")
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.plot, 1)
        self.ref = ref
        self.result: ParamStats | None = None
        self._thread = QtCore.QThread(self)
        self._worker = _StatsWorker(archive, ref, shape, element_type)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.sig_done.connect(self._show)
        self._worker.sig_failed.connect(self._fail)
        self._worker.sig_done.connect(self._thread.quit)
        self._worker.sig_failed.connect(self._thread.quit)
        self._thread.start()

    def _show(self, result: ParamStats) -> None:
        self.result = result
        counts, edges = result.histogram
        self.summary.setText(f"{self.ref.describe()}\nmin {result.minimum:.6g}   max {result.maximum:.6g}   "
                             f"mean {result.mean:.6g}   std {result.std:.6g}")
        import pyqtgraph as pg

        self.plot.addItem(pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts, brush=(80, 130, 200)))
        self.sig_ready.emit()

    def _fail(self, reason: str) -> None:
        self.summary.setText(f"{self.ref.describe()}\n{reason}")
        self.sig_ready.emit()

    def done(self, code: int) -> None:
        self._worker.cancel.set()
        self._thread.quit()
        self._thread.wait()
        super().done(code)


class _ParameterFilter(QtCore.QObject):
    def __init__(self, view: QtWidgets.QPlainTextEdit, archive_path: ArchivePath):
        super().__init__(view)
        self.view, self.archive_path = view, archive_path
        self.dialogs: list[ParameterStatsDialog] = []

    def ref_under(self, pos: QtCore.QPoint) -> ParamRef | None:
        cursor = self.view.cursorForPosition(pos)
        return ref_at(cursor.block().text(), from_utf16(cursor.block().text(), cursor.positionInBlock()))

    def typed(self, ref: ParamRef):
        """Shape and element type of `ref`, from its own line or any typed mention in the text."""
        if ref.shape is not None and ref.element_type:
            return ref.shape, ref.element_type
        return declared_types(self.view.toPlainText()).get(ref.key, (None, None))

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QtCore.QEvent.Type.ToolTip:
            ref = self.ref_under(event.pos())
            if ref is None:
                return False
            path = self.archive_path()
            where = f"\nin {path.name}" if path is not None else "\nno parameter archive in this workspace"
            QtWidgets.QToolTip.showText(event.globalPos(), ref.describe() + where, self.view)
            return True
        if event.type() == QtCore.QEvent.Type.ContextMenu:
            ref = self.ref_under(event.pos())
            if ref is None:
                return False
            menu = self.view.createStandardContextMenu(event.pos())
            action = menu.addAction(f"Statistics of parameter {ref.key}…")
            action.setEnabled(self.archive_path() is not None and self.typed(ref)[0] is not None)
            action.triggered.connect(lambda: self.open_stats(ref))
            menu.exec(event.globalPos())
            menu.deleteLater()
            return True
        return False

    def open_stats(self, ref: ParamRef) -> ParameterStatsDialog | None:
        path = self.archive_path()
        shape, element_type = self.typed(ref)
        if path is None or shape is None:
            return None
        dialog = ParameterStatsDialog(path, ref, shape, element_type, self.view)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda *_: self.dialogs.remove(dialog) if dialog in self.dialogs else None)
        self.dialogs.append(dialog)
        dialog.show()
        return dialog


def install_parameter_view(view: QtWidgets.QPlainTextEdit, archive_path: ArchivePath) -> _ParameterFilter:
    """Tooltips and statistics for parameter references in `view`; `archive_path()` names the current archive."""
    handler = _ParameterFilter(view, archive_path)
    view.viewport().installEventFilter(handler)
    return handler

