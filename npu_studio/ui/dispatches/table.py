"""Table of a phase's dispatches: `#` and kind frozen, NPU columns up front, sort and filter.

Columns: # | kind | [NPU | reason | tile | SRAM] | ONNX | FLOPs | shapes | dtype. The NPU
columns come from the NPU result (flow and npu phases only) and are kept compact; the full
text is in their tooltips and in the detail pane (`panel.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.compile.onnx_ops import node_label
from ...core.ir.dispatch_index import DispatchRecord, PhaseIndex
from ...core.units import format_flops
from ..sort_arrows import use_desktop_sort_arrows
from ..timeline import BADGE_ALERT, BADGE_COLOR

BASE_HEAD = ("#", "kind")
BASE_TAIL = ("ONNX", "FLOPs", "shapes", "dtype")
COLUMNS = BASE_HEAD + BASE_TAIL
FROZEN = len(BASE_HEAD)  # columns that stay in view while scrolling sideways
DISPATCH_ROLE = QtCore.Qt.ItemDataRole.UserRole  # the dispatch index, on every item
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1  # the value a column sorts by
MAX_WIDTH = 160  # compact columns: longer values elide (the tooltip has them)
SUBSTITUTED = "⇄"  # after the number of a dispatch whose executable is substituted


def _described(rec: DispatchRecord):
    """What has the dispatch's operands: its root op, or the data it moves."""
    return rec.root if rec.root is not None else rec.movement


def shapes_label(rec: DispatchRecord) -> str:
    d = _described(rec)
    if d is None:
        return ""

    def shape(t):
        return "x".join("?" if d is None else str(d) for d in t.shape)

    ins = ", ".join(shape(t) for t in d.inputs)
    outs = ", ".join(shape(t) for t in d.outputs)
    return f"{ins} → {outs}"


def dtype_label(rec: DispatchRecord) -> str:
    d = _described(rec)
    if d is None:
        return ""
    seen: list[str] = []
    for t in (*d.inputs, *d.outputs):
        if t.dtype not in seen:
            seen.append(t.dtype)
    return ",".join(seen)


def onnx_label(rec: DispatchRecord, op_types: dict[str, str]) -> str:
    return ", ".join(node_label(n, op_types) for n in rec.onnx_nodes)


def _text_and_key(value) -> tuple[str, object]:
    """An extra column's cell: text (sorted as text), or (text, sort key)."""
    return value if isinstance(value, tuple) else (value, value)


class _Item(QtWidgets.QTableWidgetItem):
    """Sorts by its SORT_ROLE value (numbers as numbers, blanks last)."""

    def __lt__(self, other: QtWidgets.QTableWidgetItem) -> bool:  # noqa: D105
        a, b = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if a is None or b is None:
            return a is not None
        if type(a) is not type(b):
            return str(a) < str(b)
        return a < b


class DispatchTable(QtWidgets.QTableWidget):
    sig_dispatch_selected = QtCore.Signal(object)  # dispatch index (int) or None

    def __init__(self, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setHorizontalScrollMode(QtWidgets.QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalHeader().setVisible(False)
        # Rows as tall as their text needs (the style's default is about twice that): more dispatches on show.
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.horizontalHeader().setStretchLastSection(True)
        use_desktop_sort_arrows(self.horizontalHeader())
        self.setWordWrap(False)  # one line per dispatch; long values elide (the tooltip has them)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.setAccessibleName("Dispatches")
        self._records: list[DispatchRecord] = []
        self._op_types: dict[str, str] = {}
        self._extra_headers: tuple[str, ...] = ()
        self._extra_values: dict[int, Sequence[str]] = {}
        self._marks: dict[int, tuple[str, bool]] = {}  # set_marks: tooltip, alert
        self._filter: tuple[str | None, str | None, str] = (None, None, "")
        self.frozen = self._build_frozen_view()
        self.itemSelectionChanged.connect(self._on_selection)

    def add_row_action(self, action: QtGui.QAction, on_double_click: bool = False) -> None:
        """An action on the selected row in the context menu (and on a double-click), on the frozen
        columns too: they are a view of their own on top of the table."""
        for view in (self, self.frozen):
            view.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
            view.addAction(action)
        if on_double_click:
            self.cellDoubleClicked.connect(lambda _row, _col: action.trigger())
            self.frozen.doubleClicked.connect(lambda _index: action.trigger())

    # -- the frozen `#` and kind columns (Qt's frozen-column pattern: a view on top) --------------

    def _build_frozen_view(self) -> QtWidgets.QTableView:
        view = QtWidgets.QTableView(self)
        view.setModel(self.model())
        view.setSelectionModel(self.selectionModel())
        view.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        view.verticalHeader().hide()
        view.verticalHeader().setDefaultSectionSize(self.verticalHeader().defaultSectionSize())
        view.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        use_desktop_sort_arrows(view.horizontalHeader())
        view.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setVerticalScrollMode(self.verticalScrollMode())
        view.setSelectionBehavior(self.selectionBehavior())
        view.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        view.setWordWrap(False)
        view.setStyleSheet("QTableView { border: none; border-right: 1px solid palette(mid); }")
        view.horizontalHeader().sectionClicked.connect(self._sort_from_frozen_header)
        self.verticalScrollBar().valueChanged.connect(view.verticalScrollBar().setValue)
        view.verticalScrollBar().valueChanged.connect(self.verticalScrollBar().setValue)
        self.horizontalHeader().sectionResized.connect(lambda *_: self._place_frozen())
        self.model().layoutChanged.connect(self._apply_filter)  # sorting moves rows: hide them again
        return view

    def _sort_from_frozen_header(self, column: int) -> None:
        header = self.horizontalHeader()
        ascending = header.sortIndicatorSection() != column or \
            header.sortIndicatorOrder() == QtCore.Qt.SortOrder.DescendingOrder
        self.sortByColumn(column, QtCore.Qt.SortOrder.AscendingOrder if ascending
                          else QtCore.Qt.SortOrder.DescendingOrder)

    def _sync_frozen_rows(self) -> None:
        for c in range(self.columnCount()):
            self.frozen.setColumnHidden(c, c >= FROZEN)
            if c < FROZEN:
                self.frozen.setColumnWidth(c, self.columnWidth(c))
        for r in range(self.rowCount()):
            self.frozen.setRowHidden(r, self.isRowHidden(r))
            self.frozen.setRowHeight(r, self.rowHeight(r))
        self._place_frozen()

    def _place_frozen(self) -> None:
        width = sum(self.columnWidth(c) for c in range(min(FROZEN, self.columnCount())))
        self.frozen.setGeometry(self.verticalHeader().width() + self.frameWidth(), self.frameWidth(),
                                width, self.viewport().height() + self.horizontalHeader().height())
        self.frozen.horizontalHeader().setFixedHeight(self.horizontalHeader().height())

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._place_frozen()

    def scrollTo(self, index, hint=QtWidgets.QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        # Cells under the frozen columns would be hidden: scroll only vertically for those.
        if index.column() >= FROZEN:
            super().scrollTo(index, hint)
        else:
            super().scrollTo(self.model().index(index.row(), FROZEN), hint)

    # -- content -------------------------------------------------------------------------------

    def set_index(self, index: PhaseIndex | None, op_types: dict[str, str] | None = None) -> None:
        self._records = list(index.dispatches) if index else []
        if op_types is not None:
            self._op_types = dict(op_types)
        self._fill()

    def set_extra_columns(self, headers: Sequence[str], values_by_dispatch: dict[int, Sequence[str]]) -> None:
        """NPU columns after `#` and kind, one value per header for each dispatch
        (missing dispatches stay blank); kept across set_index. No headers: none.
        A value is a text, or (text, sort key) to sort by something else."""
        self._extra_headers = tuple(headers)
        self._extra_values = dict(values_by_dispatch)
        self._fill()

    def set_marks(self, marks: dict[int, tuple[str, bool]]) -> None:
        """Dispatches whose executable is substituted: `#N ⇄` with `tooltip` (red when `alert`);
        kept across set_index, like the extra columns."""
        if marks != self._marks:
            self._marks = dict(marks)
            self._fill()

    def mark(self, dispatch: int) -> tuple[str, bool] | None:
        return self._marks.get(dispatch)

    def extra_headers(self) -> tuple[str, ...]:
        return self._extra_headers

    def headers(self) -> tuple[str, ...]:
        return BASE_HEAD + self._extra_headers + BASE_TAIL

    def column(self, header: str) -> int:
        return self.headers().index(header)

    def _row_values(self, rec: DispatchRecord) -> list[tuple[str, object]]:
        flops = rec.root.flops if rec.root and rec.root.flops is not None else None
        extra = self._extra_values.get(rec.index, ())
        return [
            (f"#{rec.index}" + (f" {SUBSTITUTED}" if rec.index in self._marks else ""), rec.index),
            (rec.kind, rec.kind or None),
            *[_text_and_key(extra[k] if k < len(extra) else "") for k in range(len(self._extra_headers))],
            (onnx_label(rec, self._op_types), onnx_label(rec, self._op_types) or None),
            ("" if flops is None else format_flops(flops), flops),
            (shapes_label(rec), shapes_label(rec) or None),
            (dtype_label(rec), dtype_label(rec) or None),
        ]

    def _fill(self) -> None:
        selected = self.selected_dispatch()
        sort_column = self.horizontalHeader().sortIndicatorSection() if self.isSortingEnabled() else -1
        sort_order = self.horizontalHeader().sortIndicatorOrder()
        self.blockSignals(True)
        self.setSortingEnabled(False)
        self.setRowCount(0)
        headers = self.headers()
        self.setColumnCount(len(headers))
        self.setHorizontalHeaderLabels(headers)
        self.setRowCount(len(self._records))
        for row, rec in enumerate(self._records):
            for col, (text, key) in enumerate(self._row_values(rec)):
                item = _Item(text)
                item.setData(DISPATCH_ROLE, rec.index)
                item.setData(SORT_ROLE, key if key != "" else None)
                if col >= FROZEN:
                    item.setToolTip(text)
                elif col == 0 and rec.index in self._marks:
                    tooltip, alert = self._marks[rec.index]
                    item.setToolTip(tooltip)
                    item.setForeground(QtGui.QColor(BADGE_ALERT if alert else BADGE_COLOR))
                self.setItem(row, col, item)
        self.resizeColumnsToContents()
        for c in range(self.columnCount() - 1):
            self.setColumnWidth(c, min(self.columnWidth(c), MAX_WIDTH))
        self.setSortingEnabled(True)
        if 0 <= sort_column < self.columnCount():
            self.sortByColumn(sort_column, sort_order)
        else:
            self.sortByColumn(0, QtCore.Qt.SortOrder.AscendingOrder)
        self._apply_filter()
        if selected is not None:
            self.select_dispatch(selected)
        self.blockSignals(False)

    # -- filter --------------------------------------------------------------------------------

    def set_filter(self, kind: str | None = None, placement: str | None = None, text: str = "") -> None:
        """Show only dispatches of `kind`, placed on `placement` ("NPU" / "CPU", from the NPU
        column), whose row contains `text` (any column, case-insensitive). None / "": any."""
        self._filter = (kind or None, placement or None, text.strip().lower())
        self._apply_filter()

    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self._records if r.kind})

    def _apply_filter(self) -> None:
        kind, placement, text = self._filter
        npu_col = self.column("NPU") if "NPU" in self._extra_headers else None
        for row in range(self.rowCount()):
            cells = [self.item(row, c).text() for c in range(self.columnCount())]
            hide = (kind is not None and cells[1] != kind) or (text and text not in " ".join(cells).lower())
            if placement is not None:
                hide = hide or npu_col is None or not cells[npu_col].startswith(placement)
            self.setRowHidden(row, bool(hide))
        self._sync_frozen_rows()

    def visible_dispatches(self) -> list[int]:
        """Dispatch indexes of the rows on show, top to bottom."""
        return [self.item(r, 0).data(DISPATCH_ROLE) for r in range(self.rowCount()) if not self.isRowHidden(r)]

    # -- selection -----------------------------------------------------------------------------

    def record(self, dispatch: int) -> DispatchRecord | None:
        return next((r for r in self._records if r.index == dispatch), None)

    def _row_of(self, dispatch: int | None) -> int | None:
        for row in range(self.rowCount()):
            if self.item(row, 0).data(DISPATCH_ROLE) == dispatch:
                return row
        return None

    def selected_dispatch(self) -> int | None:
        rows = self.selectionModel().selectedRows()
        return self.item(rows[0].row(), 0).data(DISPATCH_ROLE) if rows else None

    def select_dispatch(self, dispatch: int | None) -> bool:
        """Select the row of `dispatch` (quietly); False when this phase does not have it."""
        blocked = self.blockSignals(True)
        try:
            self.clearSelection()
            row = self._row_of(dispatch) if dispatch is not None else None
            if row is None:
                return False
            self.selectRow(row)
            self.scrollToItem(self.item(row, 0))
            return True
        finally:
            self.blockSignals(blocked)

    def _on_selection(self) -> None:
        self.sig_dispatch_selected.emit(self.selected_dispatch())
