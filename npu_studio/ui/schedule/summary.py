"""ScheduleSummary: totals, engine use and the per-dispatch table of a run.

The header gives total cycles and time, utilization per engine and the
overlap of DMA and compute; after a rerun it also gives the change against
the previous run. The table (sortable) has a row per dispatch with its
cycles, share, MAC utilization, DRAM bytes, SRAM peak and bound, plus the
change in cycles when there is a previous run. Selecting a row emits its
dispatch.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.npu.report.schedule_model import Comparison, ScheduleModel
from ..sort_arrows import use_desktop_sort_arrows
from ..sort_items import ValueSortStandardItem

# Ten hues far apart (CIE76 distance 25 or more), none near the chart's selection yellow or
# critical-path red: ten dispatches in a row never share or confuse a colour.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#cf1c90", "#17becf",
           "#9c755f", "#ff9da7", "#7f3c8d", "#a5aa99", "#b6992d")


def dispatch_color(dispatch: int) -> str:
    """A dispatch's colour on the chart; the summary's # column shows it (the legend)."""
    return PALETTE[dispatch % len(PALETTE)]


COLUMNS = ("#", "kind", "ONNX", "cycles", "share", "MAC util", "DRAM bytes", "SRAM peak", "bound", "change")
_NUMERIC = {0, 3, 4, 5, 6, 7, 9}


def _item(text: str, value=None) -> ValueSortStandardItem:
    it = ValueSortStandardItem(text)
    it.setEditable(False)
    if value is not None:
        it.setData(value, QtCore.Qt.ItemDataRole.UserRole)
        it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
    return it


def totals_text(model: ScheduleModel, unit: str = "cycles") -> str:
    t = model.totals
    lines = [f"total {t.cycles:,} cycles = {t.microseconds:,.2f} µs at {t.clock_mhz:g} MHz"]
    lines.append("utilization: " + ", ".join(f"{e} {u:.0%}" for e, u in t.utilization.items()))
    if t.overlap:
        lines.append("overlap: " + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in t.overlap.items()))
    return "\n".join(lines)


class ScheduleSummary(QtWidgets.QWidget):
    sig_dispatch_selected = QtCore.Signal(int)  # dispatch index

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.header = QtWidgets.QLabel(self)
        self.header.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.header.setWordWrap(True)
        self.change = QtWidgets.QLabel(self)
        self.change.setAccessibleName("change against the previous run")
        self.table = QtWidgets.QTableView(self)
        self.table.setAccessibleName("per-dispatch schedule table")
        self.items = QtGui.QStandardItemModel(0, len(COLUMNS), self)
        self.items.setHorizontalHeaderLabels(COLUMNS)
        self.table.setModel(self.items)
        use_desktop_sort_arrows(self.table.horizontalHeader())
        self.table.horizontalHeader().setSortIndicator(0, QtCore.Qt.SortOrder.AscendingOrder)  # dispatch order
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.header)
        layout.addWidget(self.change)
        layout.addWidget(self.table, 1)
        self._quiet = False

    def show_model(self, model: ScheduleModel | None, comparison: Comparison | None = None) -> None:
        self._quiet = True
        self.items.setRowCount(0)
        self.header.setText("" if model is None else totals_text(model))
        self.change.setText("" if comparison is None else "change: " + comparison.headline())
        if model is not None:
            sorting = self.table.isSortingEnabled()
            self.table.setSortingEnabled(False)
            for r in model.rows:
                before_after = comparison.per_dispatch.get(r.dispatch) if comparison else None
                delta = before_after[1] - before_after[0] if before_after else None
                number = _item(str(r.dispatch), r.dispatch)
                # the dispatch's colour on the chart: this column is the chart's legend
                number.setData(QtGui.QColor(dispatch_color(r.dispatch)), QtCore.Qt.ItemDataRole.DecorationRole)
                self.items.appendRow([
                    number, _item(r.kind), _item(r.onnx),
                    _item(f"{r.cycles:,}", r.cycles), _item(f"{r.share:.1%}", r.share),
                    _item(f"{r.mac_utilization:.0%}", r.mac_utilization),
                    _item(f"{r.dram_bytes:,}", r.dram_bytes), _item(f"{r.sram_peak:,}", r.sram_peak),
                    _item(r.bound),
                    _item("" if delta is None else f"{before_after[0]:,} -> {before_after[1]:,} ({delta:+,})",
                          0 if delta is None else delta),
                ])
            self.table.setSortingEnabled(sorting)
        self._quiet = False

    def row_of(self, dispatch: int) -> int | None:
        for row in range(self.items.rowCount()):
            if self.items.item(row, 0).data(QtCore.Qt.ItemDataRole.UserRole) == dispatch:
                return row
        return None

    def select_dispatch(self, dispatch: int) -> None:
        """Select the dispatch's row without announcing it again."""
        row = self.row_of(dispatch)
        if row is None:
            return
        self._quiet = True
        self.table.selectRow(row)
        self.table.scrollTo(self.items.index(row, 0))
        self._quiet = False

    def cell(self, dispatch: int, column: str) -> str:
        row = self.row_of(dispatch)
        return "" if row is None else self.items.item(row, COLUMNS.index(column)).text()

    def _on_selection(self, *_):
        if self._quiet:
            return
        rows = self.table.selectionModel().selectedRows()
        if rows:
            dispatch = self.items.item(rows[0].row(), 0).data(QtCore.Qt.ItemDataRole.UserRole)
            self.sig_dispatch_selected.emit(int(dispatch))
