"""Table of a phase's dispatches, and the detail pane for the selected one."""

from __future__ import annotations

import json
from collections.abc import Sequence

from PySide6 import QtCore, QtWidgets

from ..core.dispatch_report import format_dims
from ..core.ir_index import DispatchRecord, PhaseIndex

COLUMNS = ("#", "kind", "shapes", "dtype", "GFLOP", "ONNX node")


def shapes_label(rec: DispatchRecord) -> str:
    if rec.root is None:
        return ""

    def shape(t):
        return "x".join("?" if d is None else str(d) for d in t.shape)

    ins = ", ".join(shape(t) for t in rec.root.inputs)
    outs = ", ".join(shape(t) for t in rec.root.outputs)
    return f"{ins} → {outs}"


def dtype_label(rec: DispatchRecord) -> str:
    if rec.root is None:
        return ""
    seen: list[str] = []
    for t in (*rec.root.inputs, *rec.root.outputs):
        if t.dtype not in seen:
            seen.append(t.dtype)
    return ",".join(seen)


def detail_text(rec: DispatchRecord) -> str:
    """The full record as a user reads it: summary first, then every field."""
    lines = [f"Dispatch #{rec.index}: {rec.root.kind if rec.root else 'unknown'}"]
    if rec.onnx_nodes:
        lines.append(f"ONNX: {', '.join(rec.onnx_nodes)}")
    if rec.executable:
        lines.append(f"executable: @{rec.executable}::@{rec.export}")
    if rec.root is not None:
        fused = f", fused: {', '.join(rec.fused)}" if rec.fused else ""
        lines.append(f"op: {rec.root.op_name} ({rec.root.kind}{fused})")
        dims = format_dims(rec.root)
        if dims:
            lines.append(dims)
        if rec.root.flops is not None:
            lines.append(f"FLOPs: {rec.root.flops:,}")
    if rec.workload:
        lines.append("workload: " + ", ".join("?" if w is None else str(w) for w in rec.workload))
    if rec.producers:
        lines.append("inputs from: " + ", ".join(f"#{p}" for p in rec.producers))
    if rec.config:
        lines.append("IREE configuration:")
        for key, value in rec.config.items():
            lines.append(f"  {key}: {value}")
    lines.append("")
    lines.append(json.dumps(rec.to_json(), indent=2, default=str))
    return "\n".join(lines)


class DispatchTable(QtWidgets.QTableWidget):
    sig_dispatch_selected = QtCore.Signal(object)  # dispatch index (int) or None

    def __init__(self, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setAccessibleName("Dispatches")
        self._records: list[DispatchRecord] = []
        self._extra_headers: tuple[str, ...] = ()
        self._extra_values: dict[int, Sequence[str]] = {}
        self.itemSelectionChanged.connect(self._on_selection)

    def set_index(self, index: PhaseIndex | None) -> None:
        self.blockSignals(True)
        self.setRowCount(0)
        self._records = list(index.dispatches) if index else []
        self.setRowCount(len(self._records))
        for row, rec in enumerate(self._records):
            flops = rec.root.flops if rec.root and rec.root.flops is not None else None
            values = (
                f"#{rec.index}",
                rec.root.kind if rec.root else "",
                shapes_label(rec),
                dtype_label(rec),
                "" if flops is None else f"{flops / 1e9:.3f}",
                ", ".join(rec.onnx_nodes),
            )
            for col, value in enumerate(values):
                item = QtWidgets.QTableWidgetItem(value)
                item.setData(QtCore.Qt.ItemDataRole.UserRole, rec.index)
                self.setItem(row, col, item)
        self._fill_extra()
        self.blockSignals(False)

    def set_extra_columns(self, headers: Sequence[str], values_by_dispatch: dict[int, Sequence[str]]) -> None:
        """Columns after COLUMNS, one value per header for each dispatch
        (missing dispatches stay blank); kept across set_index. No headers: none."""
        self._extra_headers = tuple(headers)
        self._extra_values = dict(values_by_dispatch)
        self.blockSignals(True)
        self._fill_extra()
        self.blockSignals(False)

    def extra_headers(self) -> tuple[str, ...]:
        return self._extra_headers

    def _fill_extra(self) -> None:
        self.setColumnCount(len(COLUMNS) + len(self._extra_headers))
        self.setHorizontalHeaderLabels(COLUMNS + self._extra_headers)
        for row, rec in enumerate(self._records):
            values = self._extra_values.get(rec.index, ())
            for k in range(len(self._extra_headers)):
                item = QtWidgets.QTableWidgetItem(values[k] if k < len(values) else "")
                item.setData(QtCore.Qt.ItemDataRole.UserRole, rec.index)
                item.setToolTip(item.text())
                self.setItem(row, len(COLUMNS) + k, item)
        self.resizeColumnsToContents()

    def record(self, dispatch: int) -> DispatchRecord | None:
        return next((r for r in self._records if r.index == dispatch), None)

    def selected_dispatch(self) -> int | None:
        rows = self.selectionModel().selectedRows()
        return self._records[rows[0].row()].index if rows else None

    def select_dispatch(self, dispatch: int | None) -> bool:
        """Select the row of `dispatch` (quietly); False when this phase does not have it."""
        self.blockSignals(True)
        try:
            self.clearSelection()
            for row, rec in enumerate(self._records):
                if rec.index == dispatch:
                    self.selectRow(row)
                    self.scrollToItem(self.item(row, 0))
                    return True
            return False
        finally:
            self.blockSignals(False)

    def _on_selection(self) -> None:
        self.sig_dispatch_selected.emit(self.selected_dispatch())
