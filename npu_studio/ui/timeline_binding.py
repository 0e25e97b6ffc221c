"""Keeps a PhaseTimeline showing a session: phase states, times, sizes, dispatch counts."""

from __future__ import annotations

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.ir.dispatch_index import PhaseIndex
from ..core.session import NPU_PHASE, Session
from .timeline import PhaseTimeline


def phase_summary(index: PhaseIndex) -> str:
    """Tooltip lines for a phase: executables, lines, the busiest dialects."""
    counts = sorted(index.op_counts_by_dialect.items(), key=lambda kv: -kv[1])
    ops = ", ".join(f"{dialect} {n}" for dialect, n in counts[:8])
    return f"Executables: {index.num_executables}\nLines: {index.num_lines:,}\nOps: {ops}"


class TimelineBinding:
    """Redraws `timeline` whenever the session's phases, indexes or NPU result change; follows its selected phase."""

    def __init__(self, timeline: PhaseTimeline, session: Session):
        self.timeline, self.session = timeline, session
        if NPU_PHASE not in timeline.phases():
            timeline.insert_phase(NPU_PHASE, after="flow")
        session.events.workspace.connect(self._on_workspace)
        session.events.selection.connect(self._on_selection)
        for event in (session.events.phases, session.events.indexes, session.events.npu):
            event.connect(self.refresh)

    def _on_workspace(self) -> None:
        self.timeline.reset()
        self.timeline.select(None)
        self.refresh()

    def _on_selection(self) -> None:
        """The selected phase's card is highlighted (without asking for that phase again)."""
        phase = self.session.selection.phase
        if phase is not None and phase in self.timeline.phases():
            blocked = self.timeline.blockSignals(True)
            self.timeline.select(phase)
            self.timeline.blockSignals(blocked)

    def refresh(self) -> None:
        s = self.session
        ws = s.workspace
        for phase in SNAPSHOT_PHASES:
            rec = ws.manifest.phases.get(phase) if ws is not None else None
            index = s.indexes.get(phase)
            self.timeline.set_phase_info(
                phase, state=s.phase_state(phase),
                seconds=rec.seconds if rec else None, size_bytes=rec.size_bytes if rec else None,
                dispatches=index.num_dispatch_sites if index else None,
                details=phase_summary(index) if index else None)
        r = s.npu
        npu = {"seconds": r.seconds, "size_bytes": len(r.mlir.encode()), "dispatches": r.on_npu} if r else {}
        self.timeline.set_phase_info(NPU_PHASE, state=s.npu_state(), **npu)
