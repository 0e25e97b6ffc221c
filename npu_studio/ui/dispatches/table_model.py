"""The dispatch table's rows as a Qt model: texts made when a cell is drawn, sort and filter on plain lists.

A phase can hold tens of thousands of dispatches (42,920 in a 1,000,000-line flow snapshot); one
QTableWidgetItem per cell froze the window for tens of seconds. Here a refill only swaps the
records: Qt asks for the few cells on screen, a sort is one `sorted()` over the column's keys
and the filter picks the rows to show from the sorted ones (hidden rows are not in the model).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import compress
from operator import attrgetter, not_

from PySide6 import QtCore, QtGui

from ...core.compile.onnx_ops import node_label
from ...core.ir.dispatch_index import DispatchRecord
from ...core.units import format_flops
from ..timeline import BADGE_ALERT, BADGE_COLOR

BASE_HEAD = ("#", "kind")
BASE_TAIL = ("ONNX", "FLOPs", "shapes", "dtype")
COLUMNS = BASE_HEAD + BASE_TAIL
FROZEN = len(BASE_HEAD)  # columns that stay in view while scrolling sideways
DISPATCH_ROLE = QtCore.Qt.ItemDataRole.UserRole  # the dispatch index, on every cell
SORT_ROLE = int(QtCore.Qt.ItemDataRole.UserRole.value) + 1  # the value a column sorts by (None: blank)
SUBSTITUTED = "⇄"  # after the number of a dispatch whose executable is substituted
_CACHED_ROWS = 4096  # rows whose cells are kept between paints (a few screens' worth)
_AT_ONCE = 5000  # records whose texts are made at once for a sort or search; more: a slice per event-loop turn
_SLICE_SECONDS = 0.02  # Python time per event-loop turn: the window never waits 100 ms
_SEARCH = "\0search"  # the key list of the text filter: each record's cells joined, lower case
_MADE_IN_SLICES = {"ONNX", "shapes", "dtype", _SEARCH}  # texts made by Python functions (10 µs a record)

Role = QtCore.Qt.ItemDataRole
_DISPLAY, _TOOLTIP, _FOREGROUND = int(Role.DisplayRole.value), int(Role.ToolTipRole.value), int(Role.ForegroundRole.value)
_DISPATCH, _SORT = int(DISPATCH_ROLE.value), int(DISPATCH_ROLE.value) + 1
_ANSWERED = frozenset((_DISPLAY, _TOOLTIP, _FOREGROUND, _DISPATCH, _SORT))


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


def _sortable(key) -> tuple:
    """Numbers as numbers, before anything else compared as text (one column may mix them)."""
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        return (0, key, "")
    return (1, 0, str(key))


class DispatchModel(QtCore.QAbstractTableModel):
    """The records of one phase, in the order of the current sort, less those the filter hides."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._records: list[DispatchRecord] = []
        self._op_types: dict[str, str] = {}
        self._extra_headers: tuple[str, ...] = ()
        self._extra_values: dict[int, Sequence] = {}
        self._marks: dict[int, tuple[str, bool]] = {}
        self._headers: tuple[str, ...] = COLUMNS
        self._sorted: list[int] = []  # positions in _records, in sort order
        self._rows: list[int] = []  # the positions shown: _sorted less the filtered out
        self._sort: tuple[str, QtCore.Qt.SortOrder] | None = None  # header, order
        self._wanted_sort: tuple[str, QtCore.Qt.SortOrder] = ("#", QtCore.Qt.SortOrder.AscendingOrder)
        self._keys: dict[str, list] = {}  # header -> every record's sort key, while the column is unchanged
        self._filter: tuple[str | None, str | None, str] = (None, None, "")
        self._cells: dict[int, list[tuple[str, object]]] = {}  # position -> its cells, for painting
        self._making: dict[str, list] = {}  # key lists being made a slice at a time
        self._when_made: dict[str, object] = {}  # what to do once they are (the latest request)
        self._slicer = QtCore.QTimer(self, singleShot=True, interval=0)
        self._slicer.timeout.connect(self._make_slice)
        self._position_of: dict[int, int] | None = None  # dispatch -> its position in _records

    # -- content ---------------------------------------------------------------------------------

    def set_content(self, records: list[DispatchRecord], op_types: dict[str, str], extra_headers: tuple[str, ...],
                    extra_values: dict[int, Sequence], marks: dict[int, tuple[str, bool]],
                    sort: tuple[str, QtCore.Qt.SortOrder]) -> None:
        """New records, columns or marks: one model reset, sorted by `sort` (header, order) and filtered.
        Sort keys of the columns that did not change are kept (`records` the same list: same records)."""
        self.beginResetModel()
        if records is not self._records or op_types != self._op_types:
            self._keys.clear()
            self._sorted, self._sort = list(range(len(records))), None
        elif extra_headers != self._extra_headers or extra_values is not self._extra_values:
            for header in {*self._extra_headers, *extra_headers}:
                self._keys.pop(header, None)
        self._keys.pop(_SEARCH, None)  # any change shows in the texts
        self._making.clear()
        self._when_made.clear()
        self._records, self._op_types = records, op_types
        self._extra_headers, self._extra_values, self._marks = extra_headers, extra_values, marks
        self._headers = BASE_HEAD + extra_headers + BASE_TAIL
        self._cells = {}
        self._position_of = None
        header, order = sort if sort[0] in self._headers else ("#", QtCore.Qt.SortOrder.AscendingOrder)
        if (header, order) != self._sort or header not in self._keys:  # else the order holds
            self._wanted_sort = (header, order)
            if self._keys_ready(header, lambda: self._sort_if_wanted(header, order)):
                self._sort_positions(header, order)
        self._rows = self._filtered()
        if self._filter[2] and _SEARCH not in self._keys:
            self._keys_ready(_SEARCH, lambda: self._relayout(lambda: None))
        self.endResetModel()

    def headers(self) -> tuple[str, ...]:
        return self._headers

    def sort_state(self) -> tuple[str, QtCore.Qt.SortOrder]:
        """The header sorted by (or to be, once its keys are made), and how."""
        return self._wanted_sort

    def busy(self) -> bool:
        """Texts for a sort or search are being made: the rows follow when they are."""
        return bool(self._making)

    def _position(self, dispatch: int) -> int | None:
        if self._position_of is None:  # made by C loops from the `#` keys (a dict comprehension is slower)
            self._keys_ready("#", None)
            self._position_of = dict(zip(self._keys["#"], range(len(self._records))))
        return self._position_of.get(dispatch)

    def record(self, dispatch: int) -> DispatchRecord | None:
        pos = self._position(dispatch)
        return None if pos is None else self._records[pos]

    def kinds(self) -> list[str]:
        self._keys_ready("kind", None)
        return sorted(set(self._keys["kind"]) - {""})

    def dispatch_at(self, row: int) -> int:
        return self._records[self._rows[row]].index

    def row_of(self, dispatch: int) -> int | None:
        """The row showing `dispatch` (None: not in this phase, or filtered out)."""
        pos = self._position(dispatch)
        return self._row_of_position(pos) if pos is not None else None

    def _row_of_position(self, pos: int) -> int | None:
        try:
            return self._rows.index(pos)  # a scan in C: this is asked for one row at a time
        except ValueError:
            return None

    def visible_dispatches(self) -> list[int]:
        records = self._records
        return [records[p].index for p in self._rows]

    # -- cells -----------------------------------------------------------------------------------

    def _row_cells(self, pos: int) -> list[tuple[str, object]]:
        cells = self._cells.get(pos)
        if cells is None:
            if len(self._cells) >= _CACHED_ROWS:
                self._cells.clear()
            cells = self._cells[pos] = self._make_cells(self._records[pos])
        return cells

    def _make_cells(self, rec: DispatchRecord) -> list[tuple[str, object]]:
        flops = rec.root.flops if rec.root and rec.root.flops is not None else None
        extra = self._extra_values.get(rec.index, ())
        onnx, shapes, dtype = onnx_label(rec, self._op_types), shapes_label(rec), dtype_label(rec)
        return [
            (f"#{rec.index}" + (f" {SUBSTITUTED}" if rec.index in self._marks else ""), rec.index),
            (rec.kind, rec.kind or None),
            *[_text_and_key(extra[k] if k < len(extra) else "") for k in range(len(self._extra_headers))],
            (onnx, onnx or None),
            ("" if flops is None else format_flops(flops), flops),
            (shapes, shapes or None),
            (dtype, dtype or None),
        ]

    def _keys_ready(self, name: str, then) -> bool:
        """True when the key list `name` is made (made now if the records are few); else it is made a
        slice per event-loop turn and `then` runs after (a newer request for `name` replaces it)."""
        if name in self._keys:
            return True
        if name not in _MADE_IN_SLICES:
            self._keys[name] = self._quick_keys(name)
            return True
        if len(self._records) <= _AT_ONCE:
            self._keys[name] = list(map(self._key_function(name), self._records))
            return True
        self._when_made[name] = then
        self._making.setdefault(name, [])
        self._slicer.start()
        return False

    def _make_slice(self) -> None:
        if not self._making:  # the content changed since this turn was asked for
            return
        name, made = next(iter(self._making.items()))
        function = self._key_function(name)
        start, records = time.perf_counter(), self._records
        while len(made) < len(records) and time.perf_counter() - start < _SLICE_SECONDS:
            made.extend(function(r) for r in records[len(made):len(made) + 200])
        if len(made) == len(self._records):
            del self._making[name]
            self._keys[name] = made
            self._when_made.pop(name, lambda: None)()
        if self._making:
            self._slicer.start()

    def _quick_keys(self, name: str) -> list:
        """A column's keys that need no label made: a loop over all records at once."""
        records = self._records
        if name == "#":
            return list(map(attrgetter("index"), records))
        if name == "kind":
            return list(map(attrgetter("kind"), records))
        if name == "FLOPs":
            return [r.root.flops if r.root else None for r in records]
        k, values = self._extra_headers.index(name), self._extra_values
        return [_text_and_key(v[k] if k < len(v) else "")[1] if (v := values.get(r.index)) else None
                for r in records]

    def _key_function(self, name: str):
        """Record -> its label in column `name`, or its search text (10 µs or more a record)."""
        if name == _SEARCH:
            return lambda r: " ".join(t for t, _ in self._make_cells(r)).lower()
        if name == "ONNX":
            return lambda r: onnx_label(r, self._op_types)
        return {"shapes": shapes_label, "dtype": dtype_label}[name]

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802, B008 - Qt's API
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._headers)

    def headerData(self, section, orientation, role=Role.DisplayRole):  # noqa: N802
        if role == Role.DisplayRole and orientation == QtCore.Qt.Orientation.Horizontal:
            return self._headers[section] if 0 <= section < len(self._headers) else None
        return None

    def data(self, index, role=Role.DisplayRole):
        if role not in _ANSWERED:  # painting asks for a dozen roles per cell: the others are quick to refuse
            return None
        row, column = index.row(), index.column()
        if not 0 <= row < len(self._rows):
            return None
        pos = self._rows[row]
        if role == _DISPLAY:
            return self._row_cells(pos)[column][0]
        if role == _TOOLTIP:
            if column >= FROZEN:
                return self._row_cells(pos)[column][0] or None
            mark = self._marks.get(self._records[pos].index) if column == 0 else None
            return mark[0] if mark else None
        if role == _FOREGROUND:
            mark = self._marks.get(self._records[pos].index) if column == 0 else None
            return QtGui.QColor(BADGE_ALERT if mark[1] else BADGE_COLOR) if mark else None
        if role == _DISPATCH:
            return self._records[pos].index
        key = self._row_cells(pos)[column][1]  # SORT_ROLE
        return None if key == "" else key

    # -- sort and filter -------------------------------------------------------------------------

    def sort(self, column: int, order=QtCore.Qt.SortOrder.AscendingOrder) -> None:
        """Stable, from the current order (as a QTableWidget sorts): numbers as numbers, blanks last."""
        if not 0 <= column < len(self._headers) or self._wanted_sort == (self._headers[column], order):
            return
        header = self._headers[column]
        self._wanted_sort = (header, order)
        if self._keys_ready(header, lambda: self._sort_if_wanted(header, order)):
            self._sort_if_wanted(header, order)

    def _sort_if_wanted(self, header: str, order: QtCore.Qt.SortOrder) -> None:
        """Once the column's keys are made, unless another sort was asked for meanwhile."""
        if self._wanted_sort == (header, order):
            self._relayout(lambda: self._sort_positions(header, order))

    def _sort_positions(self, header: str, order: QtCore.Qt.SortOrder) -> None:
        keys, order_now = self._keys[header], self._sorted
        kinds = set(map(type, keys))  # loops in C where they can: this runs on the GUI thread
        kinds.discard(type(None))
        if None in keys or (str in kinds and "" in keys) or (float in kinds and any(k != k for k in keys)):
            filled_at = [not (k is None or k == "" or k != k) for k in keys]  # k != k: NaN
            filled = list(compress(order_now, map(filled_at.__getitem__, order_now)))
            blanks = list(compress(order_now, map(not_, map(filled_at.__getitem__, order_now))))
        else:
            filled, blanks = list(order_now), []
        plain = kinds <= {int, float} or kinds == {str}  # else wrapped: numbers first, the rest as text
        key = keys.__getitem__ if plain else [_sortable(k) for k in keys].__getitem__
        filled.sort(key=key, reverse=order == QtCore.Qt.SortOrder.DescendingOrder)
        self._sorted = filled + blanks
        self._sort = (header, order)

    def set_filter(self, kind: str | None, placement: str | None, text: str) -> None:
        """Rows of `kind`, on `placement`, containing `text`; a big table's first search shows when its
        texts are made (`busy`)."""
        if (kind, placement, text) != self._filter:
            self._filter = (kind, placement, text)
            refilter = lambda: self._relayout(lambda: None)  # noqa: E731
            if not text or self._keys_ready(_SEARCH, refilter):
                refilter()

    def _filtered(self) -> list[int]:
        kind, placement, text = self._filter
        rows, records = self._sorted, self._records
        if kind is not None:
            rows = [p for p in rows if records[p].kind == kind]
        if placement is not None:
            if "NPU" not in self._extra_headers:
                return []
            k, values = self._extra_headers.index("NPU"), self._extra_values
            rows = [p for p in rows if (v := values.get(records[p].index)) and k < len(v)
                    and _text_and_key(v[k])[0].startswith(placement)]
        if text and _SEARCH in self._keys:  # else the rows are filtered again once the texts are made
            texts = self._keys[_SEARCH]
            rows = [p for p in rows if text in texts[p]]
        return rows

    def _relayout(self, change) -> None:
        """Apply `change` to the order, then filter; selected rows follow their dispatch."""
        self.layoutAboutToBeChanged.emit()
        old = self.persistentIndexList()
        positions = [self._rows[i.row()] if 0 <= i.row() < len(self._rows) else None for i in old]
        change()
        self._rows = self._filtered()
        rows = {pos: self._row_of_position(pos) for pos in set(positions) if pos is not None}
        new = [QtCore.QModelIndex() if rows.get(pos) is None else self.index(rows[pos], index.column())
               for index, pos in zip(old, positions)]
        self.changePersistentIndexList(old, new)
        self.layoutChanged.emit()
