"""The Executables dock's list: one row per hal.executable, its substitutions, verdict and compile time.

Rows come from core/executables/catalog.py, the substitution records (core/workspace/substitutions.py)
and the times of Compile profile > Time executables (core/debug/executable_times.py).
"""

from __future__ import annotations

from PySide6 import QtWidgets

from ...core.errors import StudioError
from ...core.executables.catalog import ExecutableInfo
from ...core.workspace import substitutions as sub_records
from .verdicts import status_color, verdict_text

COLUMNS = ("executable", "dispatches", "ONNX nodes", "ops", "substituted", "verdict", "compile s")


class ExecutableList(QtWidgets.QTableWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setAccessibleName("Executables")
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)

    def fill(self, infos: list[ExecutableInfo], records: list[sub_records.Substitution], compile_times: dict,
             current: str | None) -> None:
        """One row per executable, `current` selected again; quietly (no selection signal)."""
        self.blockSignals(True)
        self.setRowCount(len(infos))
        for row, info in enumerate(infos):
            mine = [s for s in records if s.name == info.name]
            verdict, status, tip = verdict_text(mine)
            values = (info.name, ", ".join(f"#{d}" for d in info.dispatches), ", ".join(info.onnx_nodes),
                      info.ops, substitution_text(mine), verdict, time_text(compile_times.get(info.name)))
            for col, value in enumerate(values):
                item = QtWidgets.QTableWidgetItem(value)
                if col == COLUMNS.index("verdict") and status is not None:
                    item.setForeground(status_color(status))
                    item.setToolTip(tip)
                self.setItem(row, col, item)
            if info.name == current:
                self.selectRow(row)
        self.resizeColumnsToContents()
        self.blockSignals(False)


def substitution_text(items: list[sub_records.Substitution]) -> str:
    parts = []
    for s in items:
        state = "on" if s.applied else "off" if s.file else "draft"
        parts.append(f"{s.kind} ({state})" + (" — error" if s.error else ""))
    return ", ".join(parts)


def time_text(t) -> str:
    if t is None:
        return ""
    return f"{t.seconds:.3f}" if t.seconds is not None else t.status


def recorded_times(ws, on_unreadable=None):
    """The compile times of the executables alone, as recorded, or None. A damaged record: no
    column, nothing else changes, and `on_unreadable(message)` names it."""
    from ...core.debug.executable_times import load_times as load

    try:
        return load(ws) if ws is not None else None
    except StudioError as exc:
        if on_unreadable is not None:
            on_unreadable(str(exc))
        return None


def times_by_name(ws, on_unreadable=None) -> dict:
    times = recorded_times(ws, on_unreadable)
    return times.by_name() if times is not None else {}
