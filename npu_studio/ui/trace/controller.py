"""Keeps the trace dock in step with the session and runs the trace as a background job.

- "Trace against ONNX" runs `core.debug.numerics_trace.trace` on the job's
  own copy of the workspace, with progress and cancel.
- The result fills the dock and the dispatch table's error column
  (`sig_dispatch_column`, which the shell hands to the dispatch table), and selects the first divergent
  dispatch, so its row, IR region and detail are on show.
- "Break after selected" builds (or reuses) the variant broken after the
  selected dispatch with IREE's own flag and shows its output (same job
  kind: a trace and a break cancel each other).
- Another model or a new build drops the result: it was about the old build.
"""

from __future__ import annotations

from PySide6 import QtCore

from ...core.errors import Cancelled, StudioError
from ...core.session import Session
from ..jobs import JobManager
from .dock import TraceDock, error_label

TRACE_JOB = "trace"
BREAK_PREFIX = "break-"  # core/debug/dispatch_break's variant names (not imported: it loads IREE)
COLUMN = "vs ONNX"


class TraceController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log
    sig_dispatch_column = QtCore.Signal(object, object, object)  # header or None, labels by dispatch, sort keys

    def __init__(self, session: Session, jobs: JobManager, dock: TraceDock,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session, self.jobs, self.dock = session, jobs, dock
        self.report = None
        session.events.workspace.connect(self._drop)
        session.events.indexes.connect(self._drop)  # a new build was indexed: the trace was of the old one
        session.events.workspace.connect(self._list_builds)
        session.events.indexes.connect(self._list_builds)
        session.events.selection.connect(self._on_selection)
        dock.sig_trace_requested.connect(self.start)
        dock.sig_break_requested.connect(self.start_break)
        dock.sig_cancel_requested.connect(lambda: self.jobs.cancel(TRACE_JOB))
        dock.sig_dispatch_selected.connect(self.session.select_dispatch)

    def _drop(self) -> None:
        if self.report is None:
            return
        self.jobs.cancel(TRACE_JOB)
        self.report = None
        self.dock.show_report(None)
        self.sig_dispatch_column.emit(None, {}, {})

    def _list_builds(self) -> None:
        ws = self.session.workspace
        if ws is None:
            self.dock.set_builds([])
            return
        from ...core.workspace import variants

        # a break variant returns one dispatch's output: nothing to trace as a whole
        self.dock.set_builds([v.name for v in variants.variants(ws) if v.build is not None
                              and not v.name.startswith(BREAK_PREFIX)])

    def start(self) -> None:
        ws = self.session.workspace
        if ws is None:
            return
        root, build = ws.root, self.dock.build()
        self.dock.set_running(True, f"Tracing {build}: onnxruntime, then the build dispatch by dispatch...")

        def work(report, token):
            from ...core.debug.numerics_trace import trace
            from ...core.workspace.workspace import Workspace

            return trace(Workspace.open(root), on_progress=lambda done, total: report(done, total),
                         should_stop=lambda: token.cancelled, build=build)

        self.jobs.start(TRACE_JOB, work, on_done=self._on_done, on_failed=self._on_failed,
                        on_progress=self._on_progress, on_finished=lambda _: self.dock.set_running(False))

    def start_break(self) -> None:
        ws, index = self.session.workspace, self.session.selection.dispatch
        if ws is None:
            return
        if index is None:
            self.dock.show_failure("select a dispatch first", "Break")
            return
        root = ws.root
        self.dock.set_running(True, f"Building break-{index} with IREE's --iree-flow-break-dispatch after "
                                    f"dispatch #{index}, then running it and onnxruntime...")

        def work(report, token):
            from ...core.debug.dispatch_break import break_after
            from ...core.workspace.workspace import Workspace

            return break_after(Workspace.open(root), index, attach=token.attach)

        self.jobs.start(TRACE_JOB, work, on_done=self._on_break_done,
                        on_failed=lambda exc, tb, g: self._on_failed(exc, tb, g, "Break"),
                        on_finished=lambda _: self.dock.set_running(False))

    def _on_break_done(self, result, generation: int) -> None:
        self.dock.set_running(False)
        self.dock.show_break(result)
        self._list_builds()
        d = result.dispatch
        self.sig_message.emit(f"Break after dispatch #{result.index}: its output "
                              + ("departs" if d.departs else "agrees" if d.paired else "is unpaired")
                              + (f" (max abs error {d.max_abs_error:.4g})" if d.paired else ""))

    def _on_progress(self, done: int, total: int) -> None:
        self.dock.set_running(True, f"Tracing: dispatch {done} of {total}")

    def _on_done(self, report, generation: int) -> None:
        self.report = report
        self.dock.set_running(False)
        self.dock.show_report(report)
        self.sig_dispatch_column.emit(COLUMN, {d.index: error_label(d) for d in report.dispatches},
                                      {d.index: d.max_rel_error for d in report.dispatches if d.judged})
        first = report.first_divergent
        if first is not None:
            self.session.select_dispatch(first.index)
        self.dock.show_dispatch(self.session.selection.dispatch)
        self.sig_message.emit(report.summary_lines()[0] + (f"; first divergent dispatch #{first.index}"
                                                           if first is not None else "; no dispatch departs"))

    def _on_failed(self, exc: Exception, tb: str, generation: int, what: str = "Trace") -> None:
        if isinstance(exc, Cancelled):
            self.dock.show_report(self.report)
            return
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_failure(message, what)
        self.sig_message.emit(f"{what} failed: {message}")

    def _on_selection(self) -> None:
        if self.report is not None:
            self.dock.show_dispatch(self.session.selection.dispatch)
