"""GraphArea: the graph dock over the session. Graphs and layouts are built off the GUI thread (the
layout is cached in the workspace); the selection is the session's, both ways.

The graph follows the phase on show (a phase without dispatches shows flow's) and is built again
when the indexes or the NPU result change. The numerics error overlay comes from the Trace dock's
last report (`set_trace`, connected in areas.py).
"""

from __future__ import annotations

from PySide6 import QtCore

from ...core.errors import StudioError
from ...core.session import NPU_PHASE, Session
from ..shell import Area, Shell
from ..studio import Studio
from .dock import NO_COMPARE, GraphDock

GRAPH_JOB, COMPARE_JOB = "graph", "graph-compare"


def _phase_with_dispatches(phase: str | None) -> str:
    from ...core.graph.build import FLOW, NO_DISPATCHES

    return FLOW if phase in (None, NPU_PHASE, *NO_DISPATCHES) else phase


class GraphArea(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log

    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())
        self.session, self.jobs = session, studio.jobs
        self.dock = GraphDock(shell.parent_widget())
        shell.add_dock(self.dock, Area.RightDockWidgetArea, visible=False)
        self.trace: dict | None = None
        self.run = None  # the schedule's simulation (a Run) of the NPU program: the app does not save it
        self.phase: str | None = None
        self.compare_key = NO_COMPARE
        self.dock.sig_dispatch_selected.connect(session.select_dispatch)
        self.dock.sig_compare_requested.connect(self.set_compare)
        self.dock.visibilityChanged.connect(lambda shown: self.refresh() if shown and self._stale else None)
        session.events.workspace.connect(self._on_workspace)
        session.events.indexes.connect(self.refresh)
        session.events.npu.connect(self._on_npu)
        session.events.selection.connect(self._on_selection)
        self._stale = True

    # -- what to show -----------------------------------------------------------------------

    def _on_workspace(self) -> None:
        self.compare_key, self.run = NO_COMPARE, None
        self.dock.show_graph(None, None, "No model open." if self.session.workspace is None else "")
        self.refresh()

    def _on_npu(self) -> None:
        if self.session.npu_state() == "done":
            self.refresh()

    def _on_selection(self) -> None:
        phase = _phase_with_dispatches(self.session.selection.phase)
        if phase != self.phase and self.session.workspace is not None:
            self.refresh()
        else:
            self.dock.select(self.session.selection.dispatch)

    def set_simulation(self, run) -> None:
        """The schedule's Run of the session's NPU program: the cycles and SRAM overlays."""
        self.run = run
        self.refresh()

    def _simulation(self):
        """The SimResult of the program on show, if the schedule simulated that one."""
        npu = self.session.npu
        return self.run.result if self.run is not None and npu is not None and self.run.program is npu.program \
            else None

    def set_trace(self, report) -> None:
        """The Trace dock's last report (a TraceReport, or None when it was dropped)."""
        self.trace = report.to_dict() if report is not None else None
        self.refresh()

    def refresh(self) -> None:
        ws = self.session.workspace
        if ws is None or "flow" not in ws.manifest.phases:
            self._stale = False
            return
        if not self.dock.isVisible():
            self._stale = True  # built when the dock is shown: no work for a closed dock
            return
        self._stale = False
        root, phase, trace, sim = ws.root, _phase_with_dispatches(self.session.selection.phase), self.trace, \
            self._simulation()
        self.phase = phase
        self.dock.set_busy(f"Laying out the {phase} graph…")

        def work(report, token):
            from ...core.graph.build import comparable, workspace_graph
            from ...core.graph.layout import cached_layout
            from ...core.workspace.workspace import Workspace

            w = Workspace.open(root)
            graph = workspace_graph(w, phase, trace=trace, sim=sim)
            return graph, cached_layout(graph, root), comparable(w)

        self.jobs.start(GRAPH_JOB, work, on_done=self._shown, on_failed=self._failed)

    def _shown(self, result, generation: int) -> None:
        graph, layout, choices = result
        self.dock.show_graph(graph, layout)
        self.dock.set_compare_choices([(label, key) for label, key in choices])
        self.dock.select(self.session.selection.dispatch)
        if self.compare_key != NO_COMPARE:
            self.set_compare(self.compare_key)

    def _failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_graph(None, None, f"Cannot build the graph: {message}")
        self.sig_message.emit(f"Graph: {message}")

    # -- side by side -----------------------------------------------------------------------

    def set_compare(self, key: str) -> None:
        self.compare_key = key
        ws, left = self.session.workspace, self.dock.graph
        if key == NO_COMPARE or ws is None or left is None:
            self.dock.show_comparison(None, None)
            return
        root, phase = ws.root, left.phase
        self.dock.set_busy("Laying out the build beside…")

        def work(report, token):
            from ...core.graph.build import graph_for
            from ...core.graph.compare import compare_graphs
            from ...core.graph.layout import cached_layout
            from ...core.workspace.workspace import Workspace

            right = graph_for(Workspace.open(root), key, phase)
            return compare_graphs(left, right), cached_layout(right, root)

        def done(result, generation):
            self.dock.show_comparison(*result)
            self.dock.select(self.session.selection.dispatch)

        def failed(exc, tb, generation):
            message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
            self.dock.show_comparison(None, None, f"Cannot set it beside: {message}")

        self.jobs.start(COMPARE_JOB, work, on_done=done, on_failed=failed)
