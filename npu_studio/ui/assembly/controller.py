"""Keeps the assembly dock in step with the session, and links its lines both ways.

- The open model's NPU program is emitted through the backend it was planned for
  (core/npu/report/assembly_model.py) as a background job, when the dock is on screen:
  a closed or hidden dock costs nothing. Each program's listing is cached, so a program
  shown again is not emitted again; a result for a program no longer asked for is dropped.
- While the NPU program is stale, failed or being rebuilt, the listing on show says so.
- Selection goes both ways through the session (as Compiler Explorer links source and
  assembly): a clicked instruction selects its task (or, for a dispatch-wide line, its
  dispatch) everywhere; a task or dispatch selected elsewhere marks its lines here and
  scrolls to the first of them.
"""

from __future__ import annotations

from PySide6 import QtCore

from ...core.errors import StudioError
from ...core.npu.program.npu_ir import NpuProgram
from ...core.npu.report.assembly_model import AssemblyCache, AssemblyModel, assembly_model
from ...core.session import DONE, FAILED, RUNNING, Session
from ..jobs import JobManager
from .dock import AssemblyDock

ASSEMBLY_JOB = "assembly"


class AssemblyController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log

    def __init__(self, session: Session, jobs: JobManager, dock: AssemblyDock,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session, self.jobs, self.dock = session, jobs, dock
        self.cache = AssemblyCache()
        self.shown: NpuProgram | None = None  # the program whose listing is on show
        self._asked: NpuProgram | None = None  # the program the running job emits
        self._from_view = False
        session.events.workspace.connect(self._on_workspace)
        session.events.npu.connect(self.refresh)
        session.events.phases.connect(self.refresh)  # a draft of flow makes the program stale
        session.events.selection.connect(self._on_selection)
        dock.visibilityChanged.connect(lambda shown: shown and self.refresh())
        dock.sig_line_activated.connect(self._on_line)

    # -- the listing ----------------------------------------------------------------
    def _on_workspace(self) -> None:
        self.jobs.cancel(ASSEMBLY_JOB)
        self.cache.clear()
        self.shown = self._asked = None
        self.refresh()

    def refresh(self) -> None:
        npu, state = self.session.npu, self.session.npu_state()
        if state == DONE and npu is not None:
            if npu.program is self.shown:
                self.dock.mark_current()  # e.g. a cancelled compile brought this program back
            elif self.dock.isVisible():
                self._show_or_emit(npu.program)
            elif self.shown is not None:
                self.dock.mark_stale("the NPU program changed")
            return
        if self.shown is None:
            self.dock.set_note(self._blank_reason(state))
        elif state == FAILED:
            self.dock.mark_stale("the NPU program failed to build")
        elif state == RUNNING:
            self.dock.mark_stale("the NPU program is being rebuilt")
        else:
            self.dock.mark_stale(f"the NPU program is {state}")

    def _blank_reason(self, state: str) -> str:
        if self.session.workspace is None:
            return "No model open: open a model to see its NPU program's assembly."
        if state == FAILED:
            return "No assembly: the NPU program failed to build (the Log says why)."
        if state == RUNNING:
            return "Building the NPU program…"
        return f"No assembly yet: the NPU program is {state}."

    def _show_or_emit(self, program: NpuProgram) -> None:
        cached = self.cache.get(program)
        if cached is not None:
            self._show(program, cached)
            return
        if program is self._asked and self.jobs.is_running(ASSEMBLY_JOB):
            return
        self._asked = program
        if self.shown is not None:
            self.dock.mark_stale("emitting the new NPU program")
        else:
            self.dock.set_note("Emitting the NPU program…")
        self.jobs.start(ASSEMBLY_JOB, lambda report, token: (program, assembly_model(program)),
                        on_done=self._on_emitted, on_failed=self._on_failed)

    def _on_emitted(self, result: tuple[NpuProgram, AssemblyModel], generation: int) -> None:
        program, model = result
        self.cache.put(program, model)
        if program is not self._asked:
            return  # for a program that has since been replaced
        self._asked = None
        self._show(program, model)
        if model.emitted is not None:
            self.sig_message.emit(f"Assembly: {model.summary()}")

    def _show(self, program: NpuProgram, model: AssemblyModel) -> None:
        self.shown = program
        self.dock.show_model(model)
        self._on_selection()
        npu = self.session.npu
        if npu is None or npu.program is not program or self.session.npu_state() != DONE:
            self.refresh()  # the program changed while it was emitted: say so

    def _on_failed(self, exc: Exception, tb: str, generation: int) -> None:
        self._asked = None
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        if self.shown is None:
            self.dock.set_note(f"No assembly: {message}")
        self.dock.mark_failed(message)
        self.sig_message.emit(f"Assembly failed: {message}")

    # -- selection, both ways ----------------------------------------------------------
    def _on_selection(self) -> None:
        model = self.dock.model
        if model is None or model.emitted is None:
            return
        sel = self.session.selection
        self.dock.view.mark(sel.dispatch, sel.task)
        if self._from_view:
            return  # the user's own click: the listing stays where it is
        lines = (model.lines_of_task(sel.task) if sel.task is not None
                 else model.lines_of_dispatch(sel.dispatch) if sel.dispatch is not None else ())
        if lines:
            self.dock.view.go_to_line(lines[0])

    def _on_line(self, line: int) -> None:
        model = self.dock.model
        tag = model.tag_at(line) if model is not None else None
        if tag is None:
            return
        self._from_view = True
        try:
            if tag.task is not None:
                self.session.select_task(tag.task)
            else:
                self.session.select_dispatch(tag.dispatch)
        finally:
            self._from_view = False
