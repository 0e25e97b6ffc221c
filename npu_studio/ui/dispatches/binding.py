"""Keeps the dispatch panel and the IR view's dispatch regions showing the session's phase and selection."""

from __future__ import annotations

from PySide6 import QtGui

from ...core.session import NPU_PHASE, Session
from ..ir.ir_view import IrView, Region
from ..npu.panel import HEADERS, TABLE_PHASES, NpuPanel
from ..studio import Studio
from .panel import DispatchPanel

REGION_COLORS = ("#fff3c4", "#d9f2ff", "#e6ffd9", "#ffe0f0", "#ece0ff", "#ffe8d6")


class DispatchBinding:
    def __init__(self, session: Session, studio: Studio, panel: DispatchPanel, ir_view: IrView, npu: NpuPanel):
        self.session, self.studio, self.panel, self.ir_view, self.npu = session, studio, panel, ir_view, npu
        session.events.selection.connect(self.show_selection)
        self._trace: tuple[str | None, dict[int, tuple[str, object]]] = (None, {})  # the numerics trace's column

    def set_trace_column(self, header: str | None, labels: dict[int, str], keys: dict[int, float] | None = None) -> None:
        """A column with each dispatch's error against the ONNX model (None: no column); sorted by `keys`."""
        keys = keys or {}
        self._trace = (header, {i: (text, keys.get(i)) for i, text in labels.items()})
        phase = self.session.selection.phase
        if phase is not None:
            self.show_phase(phase)

    def show_phase(self, phase: str) -> None:
        """The phase's dispatches in the table (the npu phase: flow's, with the NPU columns)
        and their regions in the IR view (the npu phase: each dispatch's tasks)."""
        npu = phase == NPU_PHASE
        index = self.session.index_of(phase)
        table = self.panel.table
        table.set_index(index, self.studio.op_types)
        # The same columns in every phase; the NPU ones are filled where an NPU result applies.
        _, values = self.npu.columns()
        headers, values = HEADERS, (values if phase in TABLE_PHASES else {})
        header, errors = self._trace
        if header is not None:  # the trace's error column follows the NPU's
            blank = ("",) * len(headers)
            values = {i: (*values.get(i, blank), errors.get(i, "")) for i in {*values, *errors}}
            headers = (*headers, header)
        table.set_extra_columns(headers, values)
        self.panel.refresh_filters()
        regions = self.npu.regions(REGION_COLORS) if npu else []
        if index is not None and not npu:
            for rec in index.dispatches:
                r = rec.text_range
                if r is not None:
                    color = QtGui.QColor(REGION_COLORS[rec.index % len(REGION_COLORS)])
                    regions.append(Region(rec.index, r.start_line, r.end_line, color))
        self.ir_view.set_regions(regions)
        self.show_selection()

    def show_selection(self) -> None:
        """The selected dispatch: its row, its marked region, its detail; the selected task's op."""
        phase, dispatch, task = (self.session.selection.phase, self.session.selection.dispatch,
                                 self.session.selection.task)
        table = self.panel.table
        rec = table.record(dispatch) if table.select_dispatch(dispatch) else None
        has_region = any(r.key == dispatch for r in self.ir_view.regions())
        self.ir_view.mark_region(dispatch if rec is not None and has_region else None)
        npu = self.npu.detail(dispatch) if rec is not None and phase in TABLE_PHASES else ""
        note = self.session.index_errors.get(phase, "") if dispatch is None else ""
        self.panel.show_record(rec, self.studio.op_types, npu, note)
        if task is not None and phase == NPU_PHASE:
            self.goto_npu_task(task)

    def goto_npu_task(self, task: int) -> None:
        """Scroll the NPU IR to the task's op (`%t<id> = "npu...."`)."""
        needle = f"%t{task} = "
        for number, line in enumerate(self.ir_view.text().splitlines(), start=1):
            if line.lstrip().startswith(needle):
                self.ir_view.goto(number, line.index(needle) + 1)
                return
