"""Keeps the dispatch panel showing the session's phase and selection; the table's clicks select in the session.

Redraws once per change: a new phase, new indexes or a new NPU result refill the table; a new
selection in the same phase only moves the selected row and the detail.
"""

from __future__ import annotations

from ...core.npu_columns import HEADERS, TABLE_PHASES, detail_text, table_values
from ...core.session import Session
from ..studio import Studio
from .panel import DispatchPanel


class DispatchBinding:
    def __init__(self, session: Session, studio: Studio, panel: DispatchPanel):
        self.session, self.studio, self.panel = session, studio, panel
        self._drawn: str | None = None  # the phase the table shows
        self._trace: tuple[str | None, dict[int, tuple[str, object]]] = (None, {})  # the numerics trace's column
        e = session.events
        e.workspace.connect(self._on_workspace)
        e.selection.connect(self._on_selection)
        e.indexes.connect(self.redraw)
        e.npu.connect(lambda: self.redraw() if session.selection.phase in TABLE_PHASES else None)
        panel.sig_dispatch_selected.connect(lambda d: session.select_dispatch(d) if d is not None else None)

    def set_trace_column(self, header: str | None, labels: dict[int, str], keys: dict[int, float] | None = None) -> None:
        """A column with each dispatch's error against the ONNX model (None: no column); sorted by `keys`."""
        keys = keys or {}
        self._trace = (header, {i: (text, keys.get(i)) for i, text in labels.items()})
        self.redraw()

    def _on_workspace(self) -> None:
        self.panel.clear()
        self._drawn = None

    def _on_selection(self) -> None:
        if self.session.selection.phase != self._drawn:
            self.redraw()
        else:
            self.show_selection()

    def redraw(self) -> None:
        """The phase's dispatches in the table (the npu phase: flow's, with the NPU columns)."""
        phase = self.session.selection.phase
        if phase is None:
            return
        table = self.panel.table
        table.set_index(self.session.index_of(phase), self.studio.op_types)
        # The same columns in every phase; the NPU ones are filled where an NPU result applies.
        npu = self.session.npu
        values = table_values(npu.program) if npu is not None and phase in TABLE_PHASES else {}
        headers = HEADERS
        header, errors = self._trace
        if header is not None:  # the trace's error column follows the NPU's
            blank = ("",) * len(headers)
            values = {i: (*values.get(i, blank), errors.get(i, "")) for i in {*values, *errors}}
            headers = (*headers, header)
        table.set_extra_columns(headers, values)
        self.panel.refresh_filters()
        self._drawn = phase
        self.show_selection()

    def show_selection(self) -> None:
        """The selected dispatch: its row and its detail."""
        phase, dispatch = self.session.selection.phase, self.session.selection.dispatch
        table = self.panel.table
        rec = table.record(dispatch) if table.select_dispatch(dispatch) else None
        npu = self.session.npu
        detail = detail_text(npu.program, dispatch) if rec is not None and npu is not None and phase in TABLE_PHASES else ""
        note = self.session.index_errors.get(phase, "") if dispatch is None else ""
        self.panel.show_record(rec, self.studio.op_types, detail, note)
