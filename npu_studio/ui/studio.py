"""The app's intents on one session, run as background jobs.

`Studio` turns what the user asks for (open a model or workspace, compile, resume from an
edit, cancel, re-run the NPU pipeline, pick or edit a target) into jobs on the `JobManager`
and hands their results to the `Session`, which decides what they mean (phase states,
what to reindex, which target). Views listen to the session; the window listens to the
Studio's signals for messages (log, status, errors, progress).
"""

from __future__ import annotations

import copy
import shutil
import threading
import time
from pathlib import Path

from PySide6 import QtCore

from ..core.compile.onnx_ops import node_op_types
from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.errors import Cancelled, CompileFailed, StudioError, format_error
from ..core.ir.diagnostics import parse_diagnostics
from ..core.ir.dispatch_index import link_phase_indexes
from ..core.ir.dispatch_index.child import build_index
from ..core.ir.mlir_text import SnapshotParseError
from ..core.npu.store import workspace_io
from ..core.npu.report.coverage import coverage
from ..core.npu.program.npu_ir import NpuError
from ..core.npu.target.target import TargetError
from ..core.problems import COMPILE, GENERAL, NPU, OPEN, TARGET
from ..core.session import NpuResult, Session
from ..core.units import format_bytes
from ..core.workspace import edit_state
from ..core.workspace.index_cache import cached_index
from ..core.workspace.workspace import Workspace
from .gui_gc import long_lived_build
from .jobs import CancelToken, JobManager


def _kib(n: int) -> str:
    return format_bytes(n)


class Studio(QtCore.QObject):
    sig_compile_finished = QtCore.Signal(bool)  # True on success; sent once the job's thread ended
    sig_index_finished = QtCore.Signal()  # the dispatch indexes are current
    sig_npu_finished = QtCore.Signal(bool)  # True: a new NPU result; False: the run failed
    sig_progress = QtCore.Signal(int, int)  # phases finished, phases expected (0, 0: hide)
    sig_status = QtCore.Signal(str)  # one line for the status bar
    sig_log = QtCore.Signal(str, bool)  # text, whether it is an error
    sig_error = QtCore.Signal(str)  # a problem's message (the banner shows the session's problems)
    sig_diagnostics = QtCore.Signal(str, object)  # phase the failed compile started from, list[Diagnostic]
    sig_busy = QtCore.Signal(bool)  # a compile runs
    sig_model_opened = QtCore.Signal(str)  # a model's import succeeded (path): it belongs in Recent
    sig_open_failed = QtCore.Signal(str)  # a model's import failed or was cancelled (path)

    def __init__(self, session: Session, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session = session
        self.jobs = JobManager(session, self)
        self.jobs.sig_running_changed.connect(lambda kind, on: self.sig_busy.emit(on) if kind == "compile" else None)
        self.op_types: dict[str, str] = {}  # ONNX op type by node name, for `Conv n3` labels
        self._npu_lock = threading.Lock()  # one NPU run at a time writes a workspace's npu/ files
        self._compile_ok = False
        self._done = 0
        self._resumed: tuple[str, str] | None = None  # (phase, text) of the resume running
        self._importing: Path | None = None  # the model being imported, until its workspace exists
        self._npu_after_index = False  # a reopen runs the NPU pipeline once its indexes are in

    def is_busy(self) -> bool:
        return self.jobs.is_running("compile")

    def error(self, message: str, condition: str = GENERAL) -> None:
        """Report a problem, bound to the condition that raised it (core/problems.py): the banner
        shows it until the session ends that condition."""
        self.session.problems.raise_(condition, message)
        self.sig_error.emit(message)
        self.sig_log.emit(message, True)

    # -- opening -------------------------------------------------------------------------

    def open_workspace(self, path: Path) -> bool:
        try:
            ws = Workspace.open(path)
        except StudioError as exc:
            self.error(str(exc), OPEN)
            return False
        self.session.open_workspace(ws)
        self.op_types = node_op_types(ws.source_path)
        self.sig_log.emit(f"Opened workspace {ws.root}", False)
        self.sig_status.emit(f"Opened {ws.user_model_path.name} — {ws.root}")  # not the previous model's line
        # The IR and the dispatch table first, then the NPU pipeline: both in one process, the
        # second would slow the first down (a reopened window is usable sooner).
        self._npu_after_index = self.start_indexing()
        if not self._npu_after_index:
            self.run_npu()
        return True

    def open_model(self, path: Path, workspace_dir: Path | None, backend: str) -> None:
        """Import `path` into a fresh workspace and compile it; the old model's views clear now."""
        self.session.clear(opening=path)
        self.op_types = node_op_types(path)
        self._importing = Path(path)

        def work(report, token: CancelToken):
            report("import", None)
            ws = Workspace.create(path, workspace_dir, target=backend)
            report("imported", str(ws.root))
            if token.cancelled:  # Cancel pressed while importing: the previous build stays
                ws.abandon_pending()
                raise Cancelled()
            return self._compile(ws, ws.compile_job, report, token)

        self._start_compile(work, f"Importing {path.name}", None)

    def recompile(self, backend: str) -> None:
        root = self.session.workspace.root

        def work(report, token):
            ws = Workspace.open(root)  # the worker's own copy: the GUI's is never changed under it
            return self._compile(ws, lambda **kw: ws.compile_job(target=backend, **kw), report, token)

        self._start_compile(work, "Compiling", "start")

    def resume(self, phase: str, text: str) -> bool:
        """Keep `text` as the phase's draft (so a failed compile keeps it as an edit) and compile on.

        Only a successful compile makes it the phase's snapshot; the draft then goes. An unchanged
        phase whose later phases are current compiles nothing (False, and the log says so).
        """
        try:
            plan = edit_state.resume_plan(self.session.workspace, phase, text)
            if not plan.needed:
                self.session.workspace.discard_draft(phase)
                self.session.drop_draft(phase)
                self.sig_log.emit(f"Resume from {phase}: {plan.reason}", False)
                self.sig_status.emit(f"{phase} unchanged: nothing recompiled")
                return False
            self.session.set_draft(phase, text)
            self.session.workspace.save_draft(phase, text)
        except StudioError as exc:
            self.error(format_error(exc, prog=""), COMPILE)
            return False
        root = self.session.workspace.root
        self._resumed = (phase, text)

        def work(report, token):
            ws = Workspace.open(root)
            # What the resume replaces is set aside and kept only if it succeeds (diffs, Revert).
            notes: list[str] = []  # why no compiler's original could be kept: the user reads it in the Log
            aside = edit_state.set_aside(ws, phase, notes)
            for note in notes:
                self.sig_log.emit(f"Resume from {phase}: {note}", False)
            try:
                return self._compile(ws, lambda **kw: ws.resume_job(phase, text, **kw), report, token,
                                     finish=lambda result: (edit_state.put_in_place(ws, phase, aside),
                                                            edit_state.finish(ws, result)))
            finally:
                shutil.rmtree(aside, ignore_errors=True)

        self._start_compile(work, f"Resuming from {phase}", phase)
        return True

    def cancel(self) -> None:
        self.jobs.cancel("compile")

    # -- compiling -----------------------------------------------------------------------

    @staticmethod
    def _compile(ws: Workspace, make_job, report, token: CancelToken, finish=None) -> Workspace:
        """Worker side: run the compile job on the worker's workspace and record the result."""
        job = make_job(on_progress=lambda done, running: report("phase", done, running))
        token.attach(job.cancel)
        try:
            (finish or ws.finish)(job.run())
        except Cancelled as exc:
            ws.keep_finished(exc.finished)
            exc.workspace = ws
            raise
        return ws

    def _start_compile(self, work, message: str, from_phase: str | None) -> None:
        self._compile_ok = False
        self._done = 0
        self.sig_status.emit(message)
        self.sig_progress.emit(0, len(SNAPSHOT_PHASES))
        gen = self.jobs.start("compile", work, on_done=self._compile_done, on_failed=self._compile_failed,
                              on_progress=self._compile_progress, on_finished=self._compile_finished)
        self._compile_gen = gen
        self._compile_from = from_phase
        if from_phase is not None:
            self.session.compile_started(from_phase, gen)

    def _compile_progress(self, kind, *value) -> None:
        gen = self._compile_gen
        if kind == "imported":
            self.session.open_workspace(Workspace.open(Path(value[0])), keep_job="compile")
            opened, self._importing = self._importing, None
            if opened is not None:
                self.sig_model_opened.emit(str(opened))
            self.session.compile_started("start", gen)
        elif kind == "phase":
            done, running = value
            self.session.compile_progress(done, running, gen)
            if done:
                self._done += 1
            if running:
                self.sig_status.emit(f"Compiling: {running}")
            self.sig_progress.emit(self._done, len(SNAPSHOT_PHASES))

    def _compile_done(self, ws: Workspace, gen: int) -> None:
        resumed, self._resumed = self._resumed, None
        if not self.session.compile_finished(ws, gen):
            return
        if resumed is not None and self.session.drafts.get(resumed[0]) == resumed[1]:
            self.session.drop_draft(resumed[0])  # compiled: it is the phase's snapshot now
        seconds = ws.manifest.total_seconds
        what = f"Resumed from {self._compile_from}" if self._compile_from not in (None, "start") else "Compiled"
        self.sig_log.emit(f"{what}: {ws.user_model_path.name} for {ws.manifest.target} in {seconds:.2f} s", False)
        self.sig_status.emit(f"{what} in {seconds:.2f} s — {ws.root}")
        self.start_indexing()
        self.run_npu()
        self._compile_ok = True

    def _compile_failed(self, exc: Exception, tb: str, gen: int) -> None:
        cancelled = isinstance(exc, Cancelled)
        if cancelled:
            self.sig_status.emit("Cancelled")
            self.sig_log.emit("Compile cancelled", False)
        else:
            self._resumed = None  # a failed resume's text stays a draft
            log = getattr(exc, "log", "") or ("" if isinstance(exc, StudioError) else tb)
            diagnostics = parse_diagnostics(log) if isinstance(exc, CompileFailed) else []
            if diagnostics and exc.path is not None:
                # The compiler read a copy in a staging folder (gone now): name the file the user has.
                for d in (d for top in diagnostics for d in (top, *top.notes)):
                    if d.path is not None and Path(d.path).name == exc.path.name:
                        d.path = str(exc.path)
            condition = OPEN if self._importing is not None else COMPILE
            if diagnostics:  # the banner has the first; the Log lists each once, with its notes
                self.session.problems.raise_(condition, format_error(exc, prog=""))
                self.sig_error.emit(format_error(exc, prog=""))
                for d in diagnostics:
                    self.sig_log.emit(d.text(), d.severity == "error")
            else:
                self.error(format_error(exc, prog="") if isinstance(exc, StudioError) else f"internal error: {exc}",
                           condition)
                if log:
                    self.sig_log.emit(log, True)
            self.sig_status.emit("Failed")
            self.sig_diagnostics.emit(self._compile_from or "start", diagnostics)
        if self.session.compile_failed(gen, cancelled=cancelled, ws=getattr(exc, "workspace", None)) and cancelled:
            self.start_indexing()  # the phases that had finished
        failed, self._importing = self._importing, None
        if failed is not None:  # nothing of it was opened: the window brings back what was open
            self.sig_open_failed.emit(str(failed))

    def _compile_finished(self, gen: int) -> None:
        # Only now is the window ready for the next compile: tell listeners here, not earlier.
        self.sig_progress.emit(0, 0)
        self.sig_compile_finished.emit(self._compile_ok)

    # -- indexing ------------------------------------------------------------------------

    def start_indexing(self) -> bool:
        """Index the snapshots a compile or an edit replaced and link them with the kept ones
        (False: every index is current, nothing started)."""
        paths = self.session.phases_to_index()
        if not paths:
            return False
        kept = self.session.kept_indexes()
        kept_errors = {p: e for p, e in self.session.index_errors.items() if p not in paths}

        def work(report, token):
            def build(path, phase):  # a large snapshot's MLIR parse runs in a child: it keeps the GIL
                return build_index(path, phase, attach_stop=token.attach)  # cancel kills the child

            with long_lived_build():  # the indexes are long-lived: frozen, not walked by GUI-thread collections
                # Copies: linking changes records; made here, not on the GUI's thread (42,920 records froze it).
                indexes, errors = copy.deepcopy(kept), dict(kept_errors)
                for phase, path in paths.items():
                    if token.cancelled:
                        raise Cancelled("indexing")
                    try:
                        indexes[phase] = cached_index(path, phase, build)  # a reopen indexes nothing
                    except Cancelled:
                        raise
                    except (SnapshotParseError, StudioError) as exc:  # a bad edit or an unreadable snapshot:
                        errors[phase] = str(exc)  # the other phases still index
                link_phase_indexes(indexes)
            return indexes, errors

        self.jobs.start("index", work, on_done=self._index_done, on_failed=self._index_failed,
                        on_finished=self._index_finished)
        return True

    def _index_finished(self, gen: int) -> None:
        if self._npu_after_index and self.session.is_current("index", gen):
            self._npu_after_index = False
            self.run_npu()

    def _index_done(self, result, gen: int) -> None:
        indexes, errors = result
        if self.session.set_indexes(indexes, errors, gen):
            for message in errors.values():
                self.sig_log.emit(message, True)
            self.sig_index_finished.emit()

    def _index_failed(self, exc: Exception, tb: str, gen: int) -> None:
        if not isinstance(exc, Cancelled):
            self.sig_log.emit(f"dispatch index failed: {exc}", True)

    # -- NPU -----------------------------------------------------------------------------

    def run_npu(self) -> None:
        """Run the NPU pipeline on the model's flow snapshot with the session's target."""
        if not self.session.can_run_npu():
            return
        root, target = self.session.workspace.root, self.session.target
        lock = self._npu_lock

        def work(report, token):
            with lock:
                if token.cancelled:  # a newer run was asked for while this one waited
                    raise Cancelled("NPU pipeline")
                t0 = time.perf_counter()
                ws = Workspace.open(root)
                program = workspace_io.run_for_workspace(ws, target)
                text = workspace_io.mlir_path(ws).read_text(encoding="utf-8")
                ranges = workspace_io.dispatch_line_ranges(text)
                return NpuResult(program, text, time.perf_counter() - t0, target, ranges)

        gen = self.jobs.start("npu", work, on_done=self._npu_done, on_failed=self._npu_failed,
                              on_finished=self.session.npu_stopped)
        self.session.npu_started(gen)

    def _npu_done(self, result: NpuResult, gen: int) -> None:
        if not self.session.npu_finished(result, gen):
            return
        p = result.program
        cov = coverage(p).lines()
        self.sig_log.emit(
            f"NPU ({p.target.name}): {cov[0]}; "
            f"{len(p.tasks)} tasks, SRAM peak {_kib(p.sram_peak)} in {result.seconds:.2f} s", False)
        for line in cov[1:]:  # the fallbacks, grouped by rule
            self.sig_log.emit(line.strip(), False)
        self.sig_npu_finished.emit(True)

    def _npu_failed(self, exc: Exception, tb: str, gen: int) -> None:
        if isinstance(exc, Cancelled) or not self.session.npu_failed(gen):
            return
        if isinstance(exc, (StudioError, TargetError, NpuError, OSError)):  # each names its file and reason
            self.error(str(exc), NPU)
        else:
            self.error(f"NPU pipeline: internal error: {exc}", NPU)
            self.sig_log.emit(tb, True)
        self.sig_npu_finished.emit(False)

    def run_on_npu(self, mode: str = "in-process") -> None:
        """Run the model by IREE's runtime with the NPU dispatches through the NPU plugin (`run --npu`);
        `mode` "standalone" runs iree-run-module with the plugin's C interpreter (`--standalone`)."""
        if not self.session.can_run_npu():
            return
        root, target = self.session.workspace.root, self.session.target

        def work(report, token):
            from ..core.npu.hal.npu_run import run_npu

            with self._npu_lock:
                ws = Workspace.open(root)
                if not workspace_io.json_path(ws).is_file():
                    workspace_io.run_for_workspace(ws, target)
                return run_npu(ws, mode=mode)

        behind = "the plugin's C interpreter, iree-run-module" if mode == "standalone" else \
            "functional simulator behind it"
        self.sig_log.emit(f"Running on the NPU plugin (IREE runtime, {behind})…", False)
        self.jobs.start("npu-run", work, on_done=self._on_npu_run_done, on_failed=self._on_npu_run_failed)

    def _on_npu_run_done(self, report, gen: int) -> None:
        for line in report.summary_lines():
            self.sig_log.emit(line, False)
        if not report.ok:
            d = report.first_divergent
            self.error(f"Run on NPU: MISMATCH{f' (first divergent dispatch #{d.index})' if d else ''}")

    def _on_npu_run_failed(self, exc: Exception, tb: str, gen: int) -> None:
        if isinstance(exc, StudioError):
            self.error(format_error(exc, prog=""))
        else:
            self.error(f"Run on NPU: internal error: {exc}")
            self.sig_log.emit(tb, True)

    def set_target(self, path: Path) -> None:
        self.session.set_target(path)
        self.run_npu()

    def apply_target_edit(self, text: str, source: Path, on_rejected=None) -> Path | None:
        """Save an edited target (a bundled one becomes a named user target) and re-run with it.
        A rejected text: the banner, and `on_rejected(exc)` (the editor marks the key)."""
        try:
            dest = self.session.save_target_edit(text, source)
        except (OSError, StudioError) as exc:  # a TargetError, or a write that failed
            self.error(str(exc), TARGET)
            if on_rejected is not None:
                on_rejected(exc)
            return None
        self.sig_log.emit(f"Saved NPU target {dest}", False)
        self.run_npu()
        return dest
