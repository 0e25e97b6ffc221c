"""The open model's state, shared by every view (no Qt).

One `Session` holds what the app shows of one model: its workspace, the state
of every phase, the uncompiled drafts, the linked dispatch indexes, the NPU
result, the NPU target in use and the selection (phase, dispatch, task).
Views read from it and send the user's intents to it; it announces changes
through plain callbacks (`session.events.<name>.connect(fn)`), which the Qt
layer connects to widgets. The policies live here, tested without Qt:

- phase states: a draft makes its phase `edited`; a recorded edit makes the
  later phases `stale`; a failed compile makes the phases it should have
  written `failed`; a cancelled one keeps the phases that had finished;
- the `npu` phase follows its source phase (flow): stale or failed with it,
  stale while flow has a draft or the target changed, until it re-runs;
- what to reindex: the phases whose snapshots a compile or an edit replaced;
  the other indexes are kept and everything is linked again;
- targets: editing a bundled target saves a named user target
  (`target_store.save_edit`), which then becomes the target of this model;
  a reopened workspace uses the target its NPU results were built with;
- jobs: every background job has a generation per kind (`begin`); a result
  for an older generation, or for a model no longer open, is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .build_summary import BuildSummary, summarize, summarize_target
from .compile.phases import SNAPSHOT_PHASES, phase_index, phases_after
from .errors import StudioError
from .problems import CHANGED, COMPILE, GENERAL, NPU, OPEN, SUBSTITUTION, TARGET, UNREADABLE, Problems
from .ir.dispatch_index import DispatchRecord, PhaseIndex
from .npu.program.npu_ir import NpuProgram
from .npu.store import workspace_io
from .npu.target import target_store
from .npu.target.target import RESOURCES
from .phase_view import PhaseView, npu_view, snapshot_label, snapshot_view
from .workspace import edit_state
from .workspace.workspace import Workspace

PENDING, RUNNING, DONE, EDITED, STALE, FAILED = "pending", "running", "done", "edited", "stale", "failed"
NPU_PHASE = "npu"
NPU_SOURCE = "flow"  # the phase the NPU pipeline reads
JOB_KINDS = ("compile", "index", "npu", "simulation", "check", "passes", "profile", "compare", "trace",
             "module", "npu-run", "measure", "extract", "assembly",
             "sweep-point", "sweep-run", "graph", "graph-compare")
DEFAULT_TARGET = RESOURCES / "default.toml"


class Event:
    """A list of plain callbacks: `connect(fn)`, `disconnect(fn)`, `emit(*args)`."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, fn: Callable) -> None:
        self._callbacks.append(fn)

    def disconnect(self, fn: Callable) -> None:
        self._callbacks.remove(fn)

    def emit(self, *args) -> None:
        for fn in list(self._callbacks):
            fn(*args)


@dataclass
class Events:
    workspace: Event = field(default_factory=Event)  # another model (or none): views clear at once
    phases: Event = field(default_factory=Event)  # phase states, drafts
    indexes: Event = field(default_factory=Event)  # dispatch indexes replaced
    npu: Event = field(default_factory=Event)  # NPU result or state
    target: Event = field(default_factory=Event)  # the NPU target in use
    selection: Event = field(default_factory=Event)  # phase, dispatch or task
    problems: Event = field(default_factory=Event)  # a problem raised or its condition ended (banner)


@dataclass
class NpuResult:
    """One NPU pipeline run: the program, its MLIR text and where each dispatch's tasks are."""

    program: NpuProgram
    mlir: str
    seconds: float
    target_path: Path
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def on_npu(self) -> int:
        return sum(1 for d in self.program.dispatches if d.legal)


@dataclass
class Selection:
    phase: str | None = None
    dispatch: int | None = None  # flow-linked dispatch index: the same number in every phase
    task: int | None = None  # NPU task id


@dataclass
class _CompileRun:
    from_phase: str
    expected: tuple[str, ...]
    resume: bool = False  # from an (edited) phase: the phases it rebuilds are stale until rebuilt
    done: list[str] = field(default_factory=list)
    running: str | None = None


class Session:
    def __init__(self, target: Path | None = None):
        self.events = Events()
        self.workspace: Workspace | None = None
        self.opening: Path | None = None  # a model being imported, before it has a workspace
        self.drafts: dict[str, str] = {}
        self.indexes: dict[str, PhaseIndex] = {}
        self.index_errors: dict[str, str] = {}
        self.npu: NpuResult | None = None
        # The app's target for new models (the picker's choice), and the one this model uses.
        self.app_target: Path = Path(target) if target is not None else DEFAULT_TARGET
        self.target: Path = self.app_target
        self.selection = Selection()
        self.problems = Problems(self.events.problems.emit)
        self._compile: _CompileRun | None = None
        self._failed: set[str] = set()
        self._failed_from: str | None = None  # the phase whose resume failed (its draft is the cause)
        self._npu_state = PENDING
        self._npu_running = False
        self._generation = {kind: 0 for kind in JOB_KINDS}

    # -- jobs ---------------------------------------------------------------------

    def begin(self, kind: str) -> int:
        """A new job of `kind`: results of the earlier ones become outdated."""
        self._generation[kind] += 1
        return self._generation[kind]

    def is_current(self, kind: str, generation: int) -> bool:
        return self._generation[kind] == generation

    def _outdate_all(self, keep_job: str | None = None) -> None:
        for kind in JOB_KINDS:
            if kind != keep_job:
                self._generation[kind] += 1

    # -- which model ----------------------------------------------------------------

    def clear(self, opening: Path | None = None) -> None:
        """No model (or one still importing from `opening`): every view clears at once."""
        self._reset(None)
        self.opening = Path(opening) if opening is not None else None
        self.events.workspace.emit()
        self.events.target.emit()

    def open_workspace(self, ws: Workspace, keep_job: str | None = None) -> None:
        """Show `ws`: its drafts come back, and the target its NPU results were built with
        (recorded in it) is the one it uses; without one, the app's target. Jobs for the
        previous model become outdated, except `keep_job` (the compile that made `ws`). The same
        workspace read again (a substitution's rebuild wrote it) keeps the user's place."""
        same, kept = self.workspace is not None and self.workspace.root == ws.root, self.selection
        self._reset(ws, keep_job)
        self.selection = Selection(kept.phase, kept.dispatch) if same else self.selection
        unreadable: list[str] = []
        self.drafts = ws.drafts(unreadable)
        for message in unreadable:  # the draft stays on disk as it is; the banner names it
            self.problems.raise_(UNREADABLE, message)
        recorded = workspace_io.recorded_target(ws)
        if recorded is not None:
            self.target = recorded.path
        self.events.workspace.emit()
        self.events.target.emit()

    def _reset(self, ws: Workspace | None, keep_job: str | None = None) -> None:
        self._outdate_all(keep_job)
        self.target = self.app_target
        self.workspace, self.opening = ws, None
        self.drafts, self.indexes, self.index_errors = {}, {}, {}
        self.npu, self._npu_state, self._npu_running = None, PENDING, False
        self._compile, self._failed, self._failed_from = None, set(), None
        self.selection = Selection()
        # Problems of the model that was open end with it; a failed open's stays (it is why we are back).
        self.problems.clear(COMPILE, NPU, CHANGED, TARGET, SUBSTITUTION, UNREADABLE)

    @property
    def model_name(self) -> str | None:
        if self.workspace is not None:
            return self.workspace.user_model_path.name
        return self.opening.name if self.opening is not None else None

    # -- phase states ----------------------------------------------------------------

    def phase_state(self, phase: str) -> str:
        if phase == NPU_PHASE:
            return self.npu_state()
        run = self._compile
        if run is not None and phase in run.expected:
            if phase == run.running:
                return RUNNING
            return DONE if phase in run.done else STALE if run.resume else PENDING
        if phase in self.drafts:
            return EDITED
        if phase in self._failed:
            return FAILED
        rec = self.workspace.manifest.phases.get(phase) if self.workspace is not None else None
        return rec.state if rec is not None else PENDING

    def phase_states(self) -> dict[str, str]:
        return {p: self.phase_state(p) for p in (*SNAPSHOT_PHASES, NPU_PHASE)}

    def npu_state(self) -> str:
        """The NPU phase follows its source: stale or failed with flow, stale while flow has a draft.
        A run under way on a flow that is being rebuilt or failed is already stale."""
        source = self.phase_state(NPU_SOURCE)
        if source in (FAILED, STALE):
            return source
        if NPU_SOURCE in self.drafts:  # edited or being resumed from: whatever runs now is on the old text
            return STALE if self.npu is not None or self._npu_running else PENDING
        if self._npu_running:
            return RUNNING
        if source in (PENDING, RUNNING):
            return PENDING if self.npu is None else STALE
        return self._npu_state

    def npu_blank_reason(self) -> str:
        """Why there is no NPU result to show (the schedule says it in place of a blank chart)."""
        if self.workspace is None:
            return ("Importing the model: the NPU schedule follows its compile." if self.opening is not None
                    else "No model open: open or drop a model to see its NPU schedule.")
        if NPU_SOURCE in self.drafts:
            return f"No schedule: {NPU_SOURCE} has an edit that is not compiled; resume from it to build the NPU program."
        state = self.npu_state()
        if state == FAILED:
            source = self.phase_state(NPU_SOURCE)
            return (f"No schedule: the {NPU_SOURCE} phase failed to compile." if source == FAILED
                    else "No schedule: the NPU program failed to build (the Log says why).")
        if state == RUNNING:
            return "Building the NPU program…"
        if not self.has_snapshot(NPU_SOURCE) or self.phase_state(NPU_SOURCE) in (PENDING, RUNNING):
            return f"Not simulated yet: the NPU program is built once {NPU_SOURCE} is compiled."
        if state == PENDING:
            return f"Not simulated yet: the NPU program is built from {NPU_SOURCE} next."
        return "Simulating the NPU program…" if state == DONE else f"No schedule yet: the NPU program is {state}."

    def has_snapshot(self, phase: str) -> bool:
        return self.workspace is not None and phase in self.workspace.manifest.phases

    def phase_view(self, phase: str) -> PhaseView:
        """What the IR pane shows for `phase` (phase_view.py); StudioError if its file cannot be read."""
        if phase == NPU_PHASE:
            return npu_view(self.workspace, phase, self.npu, self.npu_state(), self.target_label())
        return snapshot_view(self.workspace, phase, self.drafts.get(phase), self.phase_state(phase))

    def snapshot_label(self, phase: str) -> str:
        """The state line `phase_view` gives a snapshot phase, as its state is now (no text is read)."""
        return snapshot_label(self.workspace, phase, phase in self.drafts, self.phase_state(phase))

    # -- drafts and edits ------------------------------------------------------------

    def stash_edit(self, phase: str, text: str) -> None:
        """Editor text that differs from the snapshot becomes the phase's draft (kept, never lost)."""
        if not edit_state.is_unchanged(self.workspace, phase, text) and self.drafts.get(phase) != text:
            self.set_draft(phase, text)

    def set_draft(self, phase: str, text: str) -> None:
        self.drafts[phase] = text
        self.events.phases.emit()

    def drop_draft(self, phase: str) -> None:
        if self.drafts.pop(phase, None) is not None:
            if phase == self._failed_from:  # undone back to the compiled text: the failed resume's cause is gone
                self._end_compile_failure()
            self.events.phases.emit()

    def _end_compile_failure(self) -> None:
        """What the failed compile marked (red phases, the banner) ends with its cause."""
        self._failed, self._failed_from = set(), None
        self.problems.clear(COMPILE)

    def save_drafts(self) -> list[str]:
        """Keep the drafts in the workspace (reopening it brings them back); one message per failure."""
        errors = []
        for phase, text in self.drafts.items():
            try:
                self.workspace.save_draft(phase, text)
            except StudioError as exc:  # BadFile naming the draft and why it cannot be written
                errors.append(str(exc))
        return errors

    def record_edit(self, phase: str, text: str) -> None:
        """The edited text becomes the phase's snapshot: later phases go stale, the phase is reindexed.
        The phase is edited only if the text differs from the compiler's output (edit_state)."""
        edit_state.record_edit(self.workspace, phase, text)  # OSError / StudioError reach the caller
        self._end_compile_failure()  # a failure was the old text's; the phases after it are now just stale
        self.drafts.pop(phase, None)
        self._drop_indexes([phase])
        if phase_index(phase) <= phase_index(NPU_SOURCE):  # the NPU result is built from text this replaced
            self.begin("npu")  # a run under way reads the old text: its result is outdated
            self._npu_running = False
            if self.npu is not None:
                self._npu_state = STALE
        self.events.phases.emit()
        self.events.npu.emit()

    def snapshot_replaced(self, phase: str) -> None:
        """The phase's snapshot changed outside a compile (a revert): reindex it, redraw the states.
        A failure of a resume from this phase (or before it) was about text that is gone now."""
        if self._failed_from is not None and phase_index(phase) <= phase_index(self._failed_from):
            self._end_compile_failure()
        self._drop_indexes([phase])
        self.events.phases.emit()
        self.events.npu.emit()

    # -- compiling -------------------------------------------------------------------

    def compile_started(self, from_phase: str, generation: int) -> None:
        if self.is_current("compile", generation):
            self._compile = _CompileRun(from_phase, phases_after(from_phase), resume=from_phase != "start")
            self._failed = set()
            self.problems.clear(COMPILE)  # the earlier failure is not the last compile's any more
            self.events.phases.emit()

    def compile_progress(self, done: str | None, running: str | None, generation: int) -> None:
        run = self._compile
        if run is None or not self.is_current("compile", generation):
            return
        if done and done not in run.done:
            run.done.append(done)
        run.running = running
        self.events.phases.emit()

    def compile_finished(self, ws: Workspace, generation: int) -> bool:
        """A compile's workspace (the worker's own copy) replaces ours; False when outdated."""
        if not self.is_current("compile", generation) or self._compile is None:
            return False
        run = self._compile
        self.workspace, self._compile = ws, None
        self.problems.clear(COMPILE, OPEN, CHANGED, GENERAL)  # a good build ends every earlier failure
        self._drop_indexes(run.expected if run.from_phase == "start" else (run.from_phase, *run.expected))
        if self.npu is not None and phase_index(run.from_phase) <= phase_index(NPU_SOURCE):
            self._npu_state = STALE  # flow changed: the NPU result is from the old one until it re-runs
        self.events.phases.emit()
        self.events.npu.emit()
        return True

    def compile_failed(self, generation: int, *, cancelled: bool, ws: Workspace | None = None) -> bool:
        """The phases the compile should have written fail, unless it was cancelled: then the
        ones that had finished are kept (`ws` has them) and the others keep their state."""
        if not self.is_current("compile", generation) or self._compile is None:
            return False
        run, self._compile = self._compile, None
        if ws is not None:
            self.workspace = ws
        if cancelled:
            self._drop_indexes(run.done)
        else:
            self._failed = set(run.expected)
            self._failed_from = run.from_phase if run.resume else None
        self.events.phases.emit()
        self.events.npu.emit()
        return True

    def is_compiling(self) -> bool:
        return self._compile is not None

    # -- dispatch indexes ------------------------------------------------------------

    def _drop_indexes(self, phases) -> None:
        for phase in phases:
            self.indexes.pop(phase, None)
            self.index_errors.pop(phase, None)

    def phases_to_index(self) -> dict[str, Path]:
        """Snapshots without a current index: the ones a compile or an edit replaced."""
        if self.workspace is None:
            return {}
        return {p: path for p, path in self.workspace.snapshots().items()
                if p not in self.indexes and p not in self.index_errors}

    def kept_indexes(self) -> dict[str, PhaseIndex]:
        """The current indexes, for a worker to link the new ones with (on deep copies of its own)."""
        return dict(self.indexes)

    def set_indexes(self, indexes: dict[str, PhaseIndex], errors: dict[str, str], generation: int) -> bool:
        if not self.is_current("index", generation):
            return False
        self.indexes, self.index_errors = dict(indexes), dict(errors)
        self.events.indexes.emit()
        return True

    def index_of(self, phase: str | None) -> PhaseIndex | None:
        """The dispatch index a phase shows (the npu phase shows flow's)."""
        return self.indexes.get(NPU_SOURCE if phase == NPU_PHASE else phase) if phase else None

    # -- NPU -------------------------------------------------------------------------

    def can_run_npu(self) -> bool:
        return self.has_snapshot(NPU_SOURCE) and self.phase_state(NPU_SOURCE) not in (FAILED, PENDING, RUNNING)

    def npu_started(self, generation: int) -> None:
        if self.is_current("npu", generation):
            self._npu_running = True
            self.events.npu.emit()

    def npu_finished(self, result: NpuResult, generation: int) -> bool:
        if not self.is_current("npu", generation):
            return False
        self.npu, self._npu_state, self._npu_running = result, DONE, False
        self.problems.clear(NPU)
        self.events.npu.emit()
        return True

    def npu_failed(self, generation: int) -> bool:
        if not self.is_current("npu", generation):
            return False
        self._npu_state, self._npu_running = FAILED, False
        self.events.npu.emit()
        return True

    def npu_stopped(self, generation: int) -> None:
        """The NPU job ended without a result for us (outdated): not running any more."""
        if self.is_current("npu", generation) and self._npu_running:
            self._npu_running = False
            self.events.npu.emit()

    # -- targets ---------------------------------------------------------------------

    def set_target(self, path: str | Path) -> None:
        """Use the target at `path` for this model (the NPU result goes stale until it re-runs)
        and for the models opened next, unless it is this workspace's own recorded copy."""
        self.target = Path(path)
        recorded = workspace_io.recorded_target(self.workspace) if self.workspace is not None else None
        if recorded is None or recorded.path != self.target:
            self.app_target = self.target
        if self.npu is not None:
            self._npu_state = STALE
        self.events.target.emit()
        self.events.npu.emit()

    def save_target_edit(self, text: str, source: str | Path, name: str | None = None) -> Path:
        """Save an edited target (a bundled one becomes a named user target) and use it.
        A rejected text (TargetError) or a failed write (OSError, StudioError) leaves the NPU result stale,
        or failed if none."""
        try:
            dest = target_store.save_edit(text, source, name)
        except (OSError, ValueError, StudioError):
            self._npu_state = STALE if self.npu is not None else FAILED
            self.events.npu.emit()
            raise
        self.problems.clear(TARGET)
        self.set_target(dest)
        return dest

    def target_label(self) -> str:
        """Which target this model's NPU result was (or will be) built with."""
        label = summarize_target(self.target, self.workspace).label  # the picker's and the summary's name
        if self.workspace is not None and self.npu is not None and self.npu_state() == DONE:
            return f"built with {label}"
        return f"target {label}"

    def build_summary(self) -> BuildSummary:
        """What this build holds besides the compiler's output: edits, substitutions, the target."""
        return summarize(self.workspace, self.target, self.drafts)

    # -- selection -------------------------------------------------------------------

    def select_phase(self, phase: str | None) -> None:
        """Show `phase`; the selected dispatch stays selected (the same number in every phase)."""
        if phase is not None and phase != NPU_PHASE:
            phase_index(phase)
        if phase != self.selection.phase:
            self.selection.phase = phase
            self.events.selection.emit()

    def select_dispatch(self, dispatch: int | None) -> None:
        task = self.selection.task
        if task is not None and self._dispatch_of_task(task) != dispatch:
            task = None
        if (dispatch, task) != (self.selection.dispatch, self.selection.task):
            self.selection.dispatch, self.selection.task = dispatch, task
            self.events.selection.emit()

    def select_task(self, task: int | None) -> None:
        """Select an NPU task; its dispatch becomes the selected dispatch."""
        dispatch = self._dispatch_of_task(task) if task is not None else self.selection.dispatch
        self.selection.task, self.selection.dispatch = task, dispatch
        self.events.selection.emit()

    def _dispatch_of_task(self, task: int) -> int | None:
        if self.npu is None:
            return None
        return next((t.dispatch for t in self.npu.program.tasks if t.id == task), None)

    def selected_record(self) -> DispatchRecord | None:
        """The selected dispatch's record in the phase on show (None if that phase lacks it)."""
        index = self.index_of(self.selection.phase)
        if index is None or self.selection.dispatch is None:
            return None
        return next((r for r in index.dispatches if r.index == self.selection.dispatch), None)
