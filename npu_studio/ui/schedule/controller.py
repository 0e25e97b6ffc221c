"""Keeps the schedule dock in step with the session.

- A new NPU result (a compile, a resume, another target, Apply in the
  target editor) reruns the simulation as a background job; the dock keeps
  the previous run on screen, marked stale, until the new one arrives, then
  shows it with the change against the previous run. A result for an
  NPU program that is no longer current is dropped (job generations).
- While the NPU result is stale, failed or being rebuilt, so is the run.
- Selection goes both ways through the session: a task clicked on the
  chart selects it (and its dispatch) everywhere; a dispatch selected
  elsewhere highlights its tasks on the chart and zooms to them; so does
  the selection a run arrives with (a restored session's dispatch).
- "Check numerics" runs the functional simulation as a job and shows its
  verdict, selecting the first divergent dispatch when there is one.
- Measured cycles the workspace keeps (`npu-studio measure --measured`,
  `calibrate`: npu/measured.csv) are drawn as a "measured" row under each
  engine they touch, when they fit the program (core/npu/calibrate/measured.py).
- "Measure CPU" profiles the CPU build (core/npu/hal/measured.py) as a job
  and draws each dispatch's measured time under the engines, from where the
  dispatch starts on the NPU; the trace export then holds both.
"""

from __future__ import annotations

from PySide6 import QtCore

from ...core.errors import StudioError
from ...core.npu.program.npu_ir import NpuProgram
from ...core.npu.report.schedule_model import Run, simulate_run
from ...core.session import DONE, FAILED, RUNNING, Session
from ..jobs import JobManager
from .dock import ScheduleDock

SIM_JOB = "simulation"
CHECK_JOB = "check"
MEASURE_JOB = "measure"


class ScheduleController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log
    sig_simulated = QtCore.Signal(object)  # a Run (program and SimResult) of the session's NPU program

    def __init__(self, session: Session, jobs: JobManager, dock: ScheduleDock,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session, self.jobs, self.dock = session, jobs, dock
        self.run: Run | None = None
        self.measured = None  # the measured-against-simulated rows of the current run (Measure CPU)
        self._asked: NpuProgram | None = None  # the program the last simulation job was for
        self._from_chart = False
        session.events.workspace.connect(self._on_workspace)
        session.events.npu.connect(self._on_npu)
        session.events.phases.connect(self._on_npu)  # a draft of flow makes the run stale
        session.events.selection.connect(self._on_selection)
        dock.sig_task_selected.connect(self._on_chart_task)
        dock.sig_dispatch_selected.connect(self._on_chart_dispatch)
        dock.sig_check_requested.connect(self.check_numerics)
        dock.sig_measure_requested.connect(self.measure_cpu)
        dock.sig_export_requested.connect(self.export)
        dock.measure_action.setEnabled(False)  # until a model is open

    # -- runs ---------------------------------------------------------------
    def _on_workspace(self) -> None:
        self.jobs.cancel(SIM_JOB)
        self.run, self._asked = None, None
        self.dock.show_run(None)
        ws = self.session.workspace
        self.dock.measure_action.setEnabled(ws is not None)  # it profiles the open model's build
        if ws is not None:
            self.dock.set_export_place(str(ws.root), ws.user_model_path.stem)
        self.dock.set_empty_reason(self.session.npu_blank_reason())

    def _on_npu(self) -> None:
        npu, state = self.session.npu, self.session.npu_state()
        if state == DONE and npu is not None:
            if npu.program is not self._asked:
                self.simulate(npu.program)
            elif self.run is not None and self.run.program is npu.program:
                self.dock.mark_current()  # e.g. a compile was cancelled and the previous build is back
            if self.run is None:
                self.dock.set_empty_reason(self.session.npu_blank_reason())
            return
        if self.run is None:
            self.dock.set_empty_reason(self.session.npu_blank_reason())
            return
        if state == FAILED:
            self.dock.mark_stale("the NPU program failed to build")
        elif state == RUNNING:
            self.dock.mark_stale("the NPU program is being rebuilt")
        else:
            self.dock.mark_stale(f"the NPU program is {state}")

    def simulate(self, program: NpuProgram) -> None:
        self._asked = program
        if self.run is not None:
            self.dock.mark_stale("simulating the new NPU program")
        ws = self.session.workspace
        root = ws.root if ws is not None else None

        def work(report, token) -> Run:
            run = simulate_run(program)
            if root is not None:  # `measure --measured` or `calibrate` kept measurements: a row beside each engine
                from ...core.npu.calibrate.measured import recorded

                measured = recorded(root, program)
                if measured is not None:
                    run.model.with_measured(measured.level, measured.cycles)
            return run

        self.jobs.start(SIM_JOB, work, on_done=self._on_run, on_failed=self._on_run_failed)

    def _on_run(self, run: Run, generation: int) -> None:
        if run.program is not self._asked:
            return  # for a program that has since been replaced
        previous = self.run.model if self.run is not None else None
        self.run = run
        self.dock.show_run(run.model, previous)
        self._on_selection()  # a restored or earlier selection: highlighted and zoomed to, as a click does
        self.measured = None  # measured against the previous program
        t = run.model.totals
        self.sig_message.emit(f"Simulated {len(run.program.tasks):,} NPU tasks: {t.cycles:,} cycles "
                              f"({t.microseconds:,.2f} µs)")
        self.sig_simulated.emit(run)

    def _on_run_failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.mark_failed(message)
        if self.run is None:
            self.dock.set_empty_reason(f"No schedule: the simulation failed: {message}")
        self.sig_message.emit(f"Simulation failed: {message}")

    # -- selection ------------------------------------------------------------
    def _on_chart_task(self, task: int) -> None:
        self._from_chart = True
        try:
            self.session.select_task(task)
        finally:
            self._from_chart = False

    def _on_chart_dispatch(self, dispatch: int) -> None:
        self._from_chart = True
        try:
            self.session.select_dispatch(dispatch)
        finally:
            self._from_chart = False

    def _on_selection(self) -> None:
        if self._from_chart or self.run is None:
            return
        sel = self.session.selection
        if sel.task is not None:
            self.dock.select_task(sel.task)
            self.dock.chart.zoom_to(*self.run.model.span([sel.task]))
        elif sel.dispatch is not None:
            self.dock.highlight_dispatch(sel.dispatch)

    # -- check, export ----------------------------------------------------------
    def check_numerics(self) -> None:
        ws, npu = self.session.workspace, self.session.npu
        if ws is None or npu is None:
            return
        program, root = npu.program, ws.root
        self.dock.show_check(["Checking numerics..."], True)

        def work(report, token):
            from ...core.npu.numerics import check
            from ...core.workspace.workspace import Workspace

            return check(Workspace.open(root), program)  # the job's own copy of the workspace

        self.jobs.start(CHECK_JOB, work, on_done=self._on_check, on_failed=self._on_check_failed)

    def _on_check(self, report, generation: int) -> None:
        self.dock.show_check(report.summary_lines(), report.ok)  # they name the substitutions in the reference
        if report.first_divergent is not None:
            self.session.select_dispatch(report.first_divergent.index)
        self.sig_message.emit(report.summary_lines()[0])

    def _on_check_failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_check([f"Check failed: {message}"], False)
        self.sig_message.emit(f"Check failed: {message}")

    def measure_cpu(self) -> None:
        ws, run = self.session.workspace, self.run
        if ws is None or run is None or ws.vmfb_path is None:
            return
        root, program, result = ws.root, run.program, run.result
        self.sig_message.emit("Profiling the CPU build with IREE's runtime...")

        def work(report, token):
            from ...core.npu.hal.measured import measured_table, profile_dispatches
            from ...core.run.runner import pick_function, random_inputs
            from ...core.workspace.workspace import Workspace

            w = Workspace.open(root)
            sig = pick_function(w.snapshot_path("input"))
            events = profile_dispatches(w.vmfb_path, sig.name, random_inputs(sig, 0, w.user_model_path),
                                        parameters=w.params_path)
            return program, measured_table(program, result, events)

        self.jobs.start(MEASURE_JOB, work, on_done=self._on_measured, on_failed=self._on_measure_failed)

    def _on_measured(self, measured, generation: int) -> None:
        from ...core.npu.hal.measured import aligned_cpu_bars

        program, rows = measured
        if self.run is None or self.run.program is not program:
            return  # for a program that has since been replaced
        self.measured = rows
        model = self.run.model
        self.dock.chart.set_cpu_track(*aligned_cpu_bars(model.task_start, model.task_dispatch,
                                                        model.totals.clock_mhz, rows))
        total = sum(r.measured_cpu_us or 0.0 for r in rows)
        self.sig_message.emit(f"Measured {sum(r.measured_cpu_us is not None for r in rows)} dispatches on the "
                              f"CPU: {total:,.1f} µs in all")

    def _on_measure_failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.sig_message.emit(f"Measuring the CPU build failed: {message}")

    def export(self, kind: str, path: str) -> None:
        if self.run is None:
            return
        from ...core.npu.hal import measured
        from ...core.npu.sim import export, trace

        try:
            if kind == "trace" and self.measured:
                measured.write_trace(self.run.program, self.run.result, self.measured, path)
            elif kind == "trace":
                trace.write_trace(self.run.program, self.run.result, path)
            elif kind == "csv":
                export.write_csv(self.run.program, self.run.result, path)
            elif kind == "png" and not self.dock.chart.grab_png(path):
                raise OSError("Qt could not write a PNG there")
        except OSError as exc:
            self.sig_message.emit(f"{path}: cannot write: {exc.strerror or exc}")
            return
        except StudioError as exc:
            self.sig_message.emit(str(exc))
            return
        self.sig_message.emit(f"Exported the schedule's {kind} to {path}")
        self.dock.check_label.set_message(f"Exported the schedule's {kind} to {path}")  # said where it wrote
        self.dock.check_label.setStyleSheet("")
        self.dock.check_label.show()
