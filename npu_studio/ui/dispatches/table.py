"""Table of a phase's dispatches: `#` and kind frozen, NPU columns up front, sort and filter.

Columns: # | kind | [NPU | reason | tile | SRAM] | ONNX | FLOPs | shapes | dtype. The NPU
columns come from the NPU result (flow and npu phases only) and are kept compact; the full
text is in their tooltips and in the detail pane (`panel.py`).

A QTableView over `DispatchModel` (table_model.py): nothing here costs a Python call per dispatch,
so a phase of tens of thousands of dispatches fills in one frame. `item`, `rowCount` and the
other QTableWidget calls callers use are kept as thin read-only stand-ins.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir.dispatch_index import DispatchRecord, PhaseIndex
from ..sort_arrows import use_desktop_sort_arrows
from .table_model import (BASE_HEAD, BASE_TAIL, COLUMNS, DISPATCH_ROLE, FROZEN, SORT_ROLE, SUBSTITUTED,  # noqa: F401
                          DispatchModel, dtype_label, onnx_label, shapes_label)

MAX_WIDTH = 160  # compact columns: longer values elide (the tooltip has them)
SIZE_SAMPLE = 100  # rows a column's width is measured on (all rows would ask Python for every cell)


class Cell:
    """One cell, read-only, with the QTableWidgetItem calls callers use (`text`, `toolTip`, `data`)."""

    def __init__(self, index: QtCore.QModelIndex):
        self.index = index

    def row(self) -> int:
        return self.index.row()

    def column(self) -> int:
        return self.index.column()

    def text(self) -> str:
        return self.index.data(QtCore.Qt.ItemDataRole.DisplayRole) or ""

    def toolTip(self) -> str:  # noqa: N802 - as QTableWidgetItem spells it
        return self.index.data(QtCore.Qt.ItemDataRole.ToolTipRole) or ""

    def foreground(self) -> QtGui.QBrush:
        return QtGui.QBrush(self.index.data(QtCore.Qt.ItemDataRole.ForegroundRole) or QtGui.QColor())

    def data(self, role: int):
        return self.index.data(role)


class DispatchTable(QtWidgets.QTableView):
    sig_dispatch_selected = QtCore.Signal(object)  # dispatch index (int) or None

    def __init__(self, parent=None):
        super().__init__(parent)
        self._model = DispatchModel(self)
        self.setModel(self._model)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setHorizontalScrollMode(QtWidgets.QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalHeader().setVisible(False)
        # Rows as tall as their text needs (the style's default is about twice that): more dispatches on show.
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setStretchLastSection(True)
        header.setResizeContentsPrecision(SIZE_SAMPLE)
        self.verticalHeader().setResizeContentsPrecision(SIZE_SAMPLE)
        use_desktop_sort_arrows(header)
        header.setSortIndicator(0, QtCore.Qt.SortOrder.AscendingOrder)  # dispatch order
        self.setSortingEnabled(True)
        self.setWordWrap(False)  # one line per dispatch; long values elide (the tooltip has them)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.setAccessibleName("Dispatches")
        self._source: list[DispatchRecord] | None = None  # the index's list, _records is a copy of
        self._records: list[DispatchRecord] = []
        self._op_types: dict[str, str] = {}
        self._extra_headers: tuple[str, ...] = ()
        self._extra_values: dict[int, Sequence] = {}
        self._marks: dict[int, tuple[str, bool]] = {}  # set_marks: tooltip, alert
        self._wanted: int | None = None  # the dispatch last selected, selected again when the filter shows it
        self.frozen = self._build_frozen_view()
        self.selectionModel().selectionChanged.connect(self._on_selection)

    def add_row_action(self, action: QtGui.QAction, on_double_click: bool = False) -> None:
        """An action on the selected row in the context menu (and on a double-click), on the frozen
        columns too: they are a view of their own on top of the table."""
        for view in (self, self.frozen):
            view.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
            view.addAction(action)
        if on_double_click:
            self.doubleClicked.connect(lambda _index: action.trigger())
            self.frozen.doubleClicked.connect(lambda _index: action.trigger())

    # -- QTableWidget's calls that callers and tests use -----------------------------------------

    def rowCount(self) -> int:  # noqa: N802 - as QTableWidget spells it
        return self._model.rowCount()

    def columnCount(self) -> int:  # noqa: N802
        return self._model.columnCount()

    def item(self, row: int, column: int) -> Cell | None:
        index = self._model.index(row, column)
        return Cell(index) if index.isValid() else None

    def visualItemRect(self, cell: Cell) -> QtCore.QRect:  # noqa: N802
        return self.visualRect(cell.index)

    def scrollToItem(self, cell: Cell, hint=QtWidgets.QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        self.scrollTo(cell.index, hint)

    # -- the frozen `#` and kind columns (Qt's frozen-column pattern: a view on top) --------------

    def _build_frozen_view(self) -> QtWidgets.QTableView:
        view = QtWidgets.QTableView(self)
        view.setModel(self._model)
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
        view.setTextElideMode(self.textElideMode())
        view.setStyleSheet("QTableView { border: none; border-right: 1px solid palette(mid); }")
        view.horizontalHeader().sectionClicked.connect(self._sort_from_frozen_header)
        self.verticalScrollBar().valueChanged.connect(view.verticalScrollBar().setValue)
        view.verticalScrollBar().valueChanged.connect(self.verticalScrollBar().setValue)
        self.horizontalHeader().sectionResized.connect(self._on_column_resized)
        return view

    def _on_column_resized(self, column: int, _old: int, width: int) -> None:
        if column < FROZEN:
            self.frozen.setColumnWidth(column, width)
        self._place_frozen()

    def _sort_from_frozen_header(self, column: int) -> None:
        header = self.horizontalHeader()
        ascending = header.sortIndicatorSection() != column or \
            header.sortIndicatorOrder() == QtCore.Qt.SortOrder.DescendingOrder
        self.sortByColumn(column, QtCore.Qt.SortOrder.AscendingOrder if ascending
                          else QtCore.Qt.SortOrder.DescendingOrder)

    def _sync_frozen_columns(self) -> None:
        """After a reset (which forgets hidden columns): only `#` and kind, as wide as the table's."""
        for c in range(self.columnCount()):
            self.frozen.setColumnHidden(c, c >= FROZEN)
            if c < FROZEN:
                self.frozen.setColumnWidth(c, self.columnWidth(c))
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
        source = index.dispatches if index else []
        if source is not self._source:  # the same index again (a redraw): its sort keys are kept
            self._source, self._records = source, list(source)
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

    def _fill(self) -> None:
        """One model reset; column widths from the first rows only (SIZE_SAMPLE), then the selection back."""
        selected = self.selected_dispatch()
        header, before = self.horizontalHeader(), self._model.headers()
        section = header.sortIndicatorSection()
        sort = (before[section] if 0 <= section < len(before) else "#", header.sortIndicatorOrder())
        blocked = self.blockSignals(True)
        try:
            self._model.set_content(self._records, self._op_types, self._extra_headers, self._extra_values,
                                    self._marks, sort)
            sorted_by, order = self._model.sort_state()  # the same column, wherever it is now
            header_blocked = header.blockSignals(True)  # the model is sorted already
            header.setSortIndicator(self.column(sorted_by), order)
            header.blockSignals(header_blocked)
            self.resizeColumnsToContents()
            for c in range(self.columnCount() - 1):
                self.setColumnWidth(c, min(self.columnWidth(c), MAX_WIDTH))
            self._sync_frozen_columns()
            if selected is not None:
                self.select_dispatch(selected)
        finally:
            self.blockSignals(blocked)

    # -- filter --------------------------------------------------------------------------------

    def set_filter(self, kind: str | None = None, placement: str | None = None, text: str = "") -> None:
        """Show only dispatches of `kind`, placed on `placement` ("NPU" / "CPU", from the NPU
        column), whose row contains `text` (any column, case-insensitive). None / "": any.
        Rows filtered out are not in the model (isRowHidden stays False)."""
        wanted = self.selected_dispatch() if self.selected_dispatch() is not None else self._wanted
        self._model.set_filter(kind or None, placement or None, text.strip().lower())
        if wanted is not None and self.selected_dispatch() is None and self._model.row_of(wanted) is not None:
            self.select_dispatch(wanted)  # filtered out and back in: selected again, quietly

    def busy(self) -> bool:
        """A big table's sort or search waits for its texts (made a slice per event-loop turn)."""
        return self._model.busy()

    def kinds(self) -> list[str]:
        return self._model.kinds()

    def visible_dispatches(self) -> list[int]:
        """Dispatch indexes of the rows on show, top to bottom."""
        return self._model.visible_dispatches()

    # -- selection -----------------------------------------------------------------------------

    def record(self, dispatch: int) -> DispatchRecord | None:
        return self._model.record(dispatch)

    def selected_dispatch(self) -> int | None:
        rows = self.selectionModel().selectedRows()
        return self._model.dispatch_at(rows[0].row()) if rows else None

    def select_dispatch(self, dispatch: int | None) -> bool:
        """Select the row of `dispatch` (quietly); False when this phase does not have it.
        Filtered out: selected when the filter shows it again."""
        blocked = self.blockSignals(True)
        try:
            self._wanted = dispatch
            self.clearSelection()
            if dispatch is None or self._model.record(dispatch) is None:
                return False
            row = self._model.row_of(dispatch)
            if row is not None:
                self.selectRow(row)
                self.scrollTo(self._model.index(row, 0))
            return True
        finally:
            self.blockSignals(blocked)

    def _on_selection(self, *_) -> None:
        dispatch = self.selected_dispatch()
        if dispatch is not None:
            self._wanted = dispatch
        self.sig_dispatch_selected.emit(dispatch)
