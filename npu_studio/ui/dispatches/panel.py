"""The dispatch table with its filter bar, and the selected dispatch's detail.

The detail is a readable summary (what the op computes, where it came from, how IREE
configured it, where the NPU puts it); the raw record as JSON is behind a toggle.
"""

from __future__ import annotations

import json

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.compile.onnx_ops import node_label
from ...core.ir.dispatch_index import DispatchRecord
from ...core.ir.dispatch_report import format_dims, format_quant
from .table import DispatchTable

ANY_KIND, ANY_PLACE = "all kinds", "NPU or CPU"


def dispatch_summary(rec: DispatchRecord, op_types: dict[str, str] | None = None, npu: str = "") -> str:
    """The record as a user reads it: what, from which ONNX nodes, how IREE configured it."""
    op_types = op_types or {}
    lines = [f"Dispatch #{rec.index}: {rec.kind or 'unknown'}"]
    if rec.onnx_nodes:
        lines.append(f"ONNX: {', '.join(node_label(n, op_types) for n in rec.onnx_nodes)}")
    if npu:
        lines += ["", npu, ""]
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
    elif rec.movement is not None:
        m = rec.movement
        shapes = lambda ts: ", ".join("x".join("?" if d is None else str(d) for d in t.shape) + f" {t.dtype}"  # noqa: E731
                                      for t in ts)
        lines.append(f"data movement ({m.kind}): reads {shapes(m.inputs)}; writes into {shapes(m.outputs)}")
        if m.bytes_moved is not None:
            lines.append(f"bytes moved: {m.bytes_moved:,} (no arithmetic)")
    lines += format_quant(rec)
    if rec.workload:
        lines.append("workload: " + ", ".join("?" if w is None else str(w) for w in rec.workload))
    if rec.producers:
        lines.append("inputs from: " + ", ".join(f"#{p}" for p in rec.producers))
    if rec.target:
        lines.append(f"IREE target: {rec.target}")
    config = rec.config or {}
    if "pipeline" in config:
        lines.append(f"IREE pipeline: {config['pipeline']}")
    for name, sizes in (config.get("tile_sizes") or {}).items():
        lines.append(f"IREE {name}: {sizes}")
    return "\n".join(lines)


class DispatchPanel(QtWidgets.QSplitter):
    """Filter bar and table above, detail below (summary, or raw JSON when toggled)."""

    sig_dispatch_selected = QtCore.Signal(object)  # dispatch index or None (the table's selection)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(QtCore.Qt.Orientation.Vertical, parent)
        self.table = DispatchTable()
        self.table.sig_dispatch_selected.connect(self.sig_dispatch_selected)
        self.kind_filter = QtWidgets.QComboBox(accessibleName="Filter by kind")
        self.place_filter = QtWidgets.QComboBox(accessibleName="Filter by NPU or CPU")
        self.place_filter.addItems([ANY_PLACE, "NPU", "CPU"])
        self.text_filter = QtWidgets.QLineEdit(placeholderText="Filter…", clearButtonEnabled=True)
        self.text_filter.setAccessibleName("Filter dispatches by text")
        for combo in (self.kind_filter, self.place_filter):
            combo.currentIndexChanged.connect(self._apply_filter)
        self.text_filter.textChanged.connect(self._apply_filter)
        bar = QtWidgets.QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.kind_filter)
        bar.addWidget(self.place_filter)
        bar.addWidget(self.text_filter, 1)
        top = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(top)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)

        self.detail = QtWidgets.QPlainTextEdit(readOnly=True)
        self.detail.setAccessibleName("Dispatch detail")
        self.detail.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.raw_toggle = QtWidgets.QCheckBox("Raw JSON")
        self.raw_toggle.setToolTip("Show the dispatch's full record as JSON")
        self.raw_toggle.toggled.connect(lambda _: self._render())
        bottom = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(bottom)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.raw_toggle, 0, QtCore.Qt.AlignmentFlag.AlignRight)
        layout.addWidget(self.detail, 1)
        self.addWidget(top)
        self.addWidget(bottom)
        self.setStretchFactor(0, 3)  # the table first: the detail of one dispatch scrolls
        self.setStretchFactor(1, 2)
        self._shown: tuple[DispatchRecord | None, dict, str, str] = (None, {}, "", "")
        self._update_kinds()

    def clear(self) -> None:
        self.table.set_index(None)
        self.table.set_extra_columns((), {})
        self.show_record(None)
        self._update_kinds()

    def refresh_filters(self) -> None:
        """The kinds on offer follow the table's content (call after `table.set_index`)."""
        self._update_kinds()

    def _update_kinds(self) -> None:
        current = self.kind_filter.currentText()
        blocked = self.kind_filter.blockSignals(True)
        self.kind_filter.clear()
        self.kind_filter.addItems([ANY_KIND, *self.table.kinds()])
        self.kind_filter.setCurrentText(current if current in self.table.kinds() else ANY_KIND)
        self.kind_filter.blockSignals(blocked)
        self._apply_filter()

    def _apply_filter(self) -> None:
        kind = self.kind_filter.currentText()
        place = self.place_filter.currentText()
        self.table.set_filter(None if kind == ANY_KIND else kind, None if place == ANY_PLACE else place,
                              self.text_filter.text())

    def show_record(self, rec: DispatchRecord | None, op_types: dict | None = None, npu: str = "",
                    note: str = "") -> None:
        """Show `rec` (None: just `note`, e.g. why the phase has no index)."""
        self._shown = (rec, op_types or {}, npu, note)
        self._render()

    def _render(self) -> None:
        rec, op_types, npu, note = self._shown
        if rec is None:
            self.detail.setPlainText(note)
        elif self.raw_toggle.isChecked():
            self.detail.setPlainText(json.dumps(rec.to_json(), indent=2, default=str))
        else:
            self.detail.setPlainText(dispatch_summary(rec, op_types, npu))
