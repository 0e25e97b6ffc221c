"""The NPU backend in the main window: the `npu` phase, its columns, the target.

`NpuPanel` runs `workspace_io.run_for_workspace` in a Worker whenever the
window asks (`run`), keeps the last result, updates the `npu` timeline
segment, and owns the target choice (QSettings) and the target editor
dock. The window asks it for table columns, detail text and regions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.npu import target_store, workspace_io
from ..core.npu.coverage import coverage
from ..core.units import format_bytes
from ..core.npu.npu_ir import DispatchInfo, NpuProgram
from ..core.npu.passes import NpuError
from ..core.npu.target import TargetError
from ..core.workspace import Workspace
from ..resources import TARGETS_DIR
from .ir_view import Region
from .target_editor import TargetEditor
from .workers import Worker

NPU_PHASE = "npu"
AFTER_PHASE = "flow"
SETTINGS_KEY = "npu/target"
DEFAULT_TARGET = TARGETS_DIR / "default.toml"
HEADERS = ("NPU", "reason", "tile", "SRAM")
TABLE_PHASES = ("flow", NPU_PHASE)


def kib(n: int) -> str:
    return format_bytes(n)


def tile_label(d: DispatchInfo) -> str:
    """`F8 OH66 OW352 C3 KH3 KW3`: tile size per loop ("" for a fallback)."""
    return " ".join(f"{n}{s}" for n, s in zip(d.loop_dims, d.tile_sizes))


def table_values(p: NpuProgram) -> dict[int, tuple[str, str, str, str]]:
    return {d.index: (f"NPU {d.unit}" if d.legal else "CPU fallback", d.reason, tile_label(d),
                      kib(p.dispatch_sram_peak(d.index)) if d.legal else "")
            for d in p.dispatches}


def detail_text(p: NpuProgram, index: int) -> str:
    d = next((x for x in p.dispatches if x.index == index), None)
    if d is None:
        return ""
    tasks = p.tasks_of(index)
    lines = [f"NPU ({p.target.name}): " + (f"{d.kind} -> NPU {d.unit}" if d.legal
                                           else f"CPU fallback: {d.reason} [rule {d.rule}]")]
    if d.acc_dtype:
        lines.append(f"  types: {d.dtype} inputs, {d.acc_dtype} accumulator")
    if d.transposed:
        lines.append(f"  transposed: {', '.join(d.transposed)} (by the {d.transpose_by})")
    if d.transfer:
        pad = f", pad value {d.pad_value}" if d.pad_value else ""
        lines.append(f"  DMA: {d.transfer} transfer DRAM to DRAM{pad}")
    if d.legal and d.unit != "dma":
        dims = " ".join(f"{n}={r}" for n, r in zip(d.loop_dims, d.loop_ranges))
        lines.append(f"  loops: {dims}")
        lines.append(f"  tile: {tile_label(d)} ({d.num_tiles} tiles)")
        lines.append("  loop order: " + " ".join(d.loop_dims[i] for i in d.loop_order))
        lines.append(f"  SRAM: {kib(d.sram_bytes)} double-buffered working set, "
                     f"peak {kib(p.dispatch_sram_peak(index))} of {kib(p.target.sram_bytes)}")
    if tasks:
        lines.append(f"  tasks: {len(tasks)} ({tasks[0].op}, #{tasks[0].id}..#{tasks[-1].id})")
    return "\n".join(lines)


@dataclass
class NpuResult:
    workspace: Workspace
    target: Path
    program: NpuProgram
    mlir: str
    seconds: float
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def on_npu(self) -> int:
        return sum(1 for d in self.program.dispatches if d.legal)


class NpuPanel(QtCore.QObject):
    sig_finished = QtCore.Signal(bool)  # True: a new result is shown; False: the run failed
    sig_target_changed = QtCore.Signal(str)  # path of the target now in use

    def __init__(self, window: QtWidgets.QMainWindow, settings: QtCore.QSettings):
        super().__init__(window)
        self.window = window
        self.settings = settings
        self.result: NpuResult | None = None
        self.state = "pending"
        self._worker: Worker | None = None
        self._rerun = False
        saved = settings.value(SETTINGS_KEY)
        self._target = Path(saved) if saved and Path(saved).is_file() else DEFAULT_TARGET
        window.timeline.insert_phase(NPU_PHASE, after=AFTER_PHASE)
        self._build_ui()

    # -- widgets and actions ---------------------------------------------------

    def _build_ui(self) -> None:
        w = self.window
        self.editor = TargetEditor()
        self.editor.sig_apply.connect(self.apply_target_text)
        self.dock = QtWidgets.QDockWidget("NPU target", w)
        self.dock.setObjectName("npuTargetDock")
        self.dock.setWidget(self.editor)
        w.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.dock.hide()
        menu = w.menuBar().addMenu("&NPU")
        self.choose_action = menu.addAction("NPU &target…", self.choose_target_dialog)
        self.edit_action = menu.addAction("&Edit NPU target", self.edit_target)
        self.run_action = menu.addAction("&Re-run NPU pipeline", self.run)
        bar = w.addToolBar("NPU")
        bar.setObjectName("npuToolbar")
        bar.addAction(self.choose_action)
        bar.addAction(self.edit_action)
        self._update_tooltip()

    def _update_tooltip(self) -> None:
        self.choose_action.setToolTip(f"NPU target: {self._target}")

    # -- target ----------------------------------------------------------------

    def target_path(self) -> Path:
        return self._target

    def set_target(self, path: str | Path, run: bool = True) -> None:
        """Use the target at `path` (remembered) and re-run on the open workspace."""
        self._target = Path(path)
        self.settings.setValue(SETTINGS_KEY, str(self._target))
        self._update_tooltip()
        if self.dock.isVisible() and self.editor.path() != self._target:
            self.editor.load(self._target)
        self.sig_target_changed.emit(str(self._target))
        if run:
            self.run()

    def choose_target_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self.window, "NPU target", str(self._target.parent), "NPU targets (*.toml);;All files (*)")
        if path:
            self.set_target(path)

    def edit_target(self) -> None:
        self.editor.load(self._target)
        self.dock.show()
        self.dock.raise_()
        self.editor.edit.setFocus()

    def apply_target_text(self, text: str) -> None:
        """Check and save the editor's text, then re-run. An invalid text is
        reported (file:line: key: reason) and the last result stays, stale.
        A bundled target is never written: its edit becomes a named user target."""
        source = self.editor.path() or self._target
        try:
            dest = target_store.save_edit(text, source)
        except (TargetError, OSError) as exc:
            self.window.show_error(str(exc))
            self._set_state("stale" if self.result is not None else "failed")
            return
        self.window.clear_error()
        self.editor.set_path(dest)
        self.editor.edit.document().setModified(False)
        self.window.log.append_text(f"Saved NPU target {dest}")
        self.set_target(dest)

    # -- running ---------------------------------------------------------------

    def reset(self) -> None:
        """A different workspace: forget the result (the segment goes pending)."""
        self.result = None
        self._set_state("pending")

    def is_running(self) -> bool:
        return self._worker is not None

    def run(self) -> None:
        """Run the pipeline on the window's workspace (queued if one is running)."""
        ws = self.window.workspace
        if ws is None or workspace_io.FLOW_PHASE not in ws.manifest.phases:
            return
        if self._worker is not None:
            self._rerun = True
            return
        target = self._target

        def work(report):
            t0 = time.perf_counter()
            program = workspace_io.run_for_workspace(ws, target)
            text = workspace_io.mlir_path(ws).read_text(encoding="utf-8")
            ranges = workspace_io.dispatch_line_ranges(text)
            return NpuResult(ws, target, program, text, time.perf_counter() - t0, ranges)

        self._set_state("running")
        worker = Worker(work, parent=self)
        worker.sig_done.connect(self._on_done)
        worker.sig_failed.connect(self._on_failed)
        worker.finished.connect(self._on_worker_finished)
        self._worker = worker
        worker.start()

    def wait(self, ms: int = 10000) -> None:
        if self._worker is not None:
            self._worker.wait(ms)

    def _on_done(self, result: NpuResult) -> None:
        if result.workspace is not self.window.workspace:
            return  # a run for a workspace no longer open
        self.result = result
        self._set_state("done")
        p = result.program
        cov = coverage(p).lines()
        self.window.log.append_text(
            f"NPU ({p.target.name}): {cov[0]}; "
            f"{len(p.tasks)} tasks, SRAM peak {kib(p.sram_peak)} in {result.seconds:.2f} s")
        for line in cov[1:]:  # the fallbacks, grouped by rule
            self.window.log.append_text(line.strip())
        self.sig_finished.emit(True)

    def _on_failed(self, exc: Exception, tb: str) -> None:
        if isinstance(exc, (TargetError, NpuError, OSError)):
            self.window.show_error(str(exc))
        else:
            self.window.show_error(f"NPU pipeline: internal error: {exc}")
            self.window.log.append_text(tb, error=True)
        self._set_state("failed")
        self.sig_finished.emit(False)

    def _on_worker_finished(self) -> None:
        self._worker = None
        if self._rerun:
            self._rerun = False
            self.run()

    def _set_state(self, state: str) -> None:
        self.state = state
        r = self.result
        if r is None or state in ("pending",):
            self.window.timeline.set_phase_info(NPU_PHASE, state=state)
        else:
            self.window.timeline.set_phase_info(
                NPU_PHASE, state=state, seconds=r.seconds, size_bytes=len(r.mlir.encode()),
                dispatches=r.on_npu)

    # -- what the window shows -------------------------------------------------

    def columns(self) -> tuple[tuple[str, ...], dict[int, tuple[str, ...]]]:
        if self.result is None:
            return (), {}
        return HEADERS, table_values(self.result.program)

    def detail(self, dispatch: int) -> str:
        return detail_text(self.result.program, dispatch) if self.result is not None else ""

    def text(self) -> str:
        if self.result is not None:
            return self.result.mlir
        return f"// NPU pipeline: {self.state}\n"

    def regions(self, colors: tuple[str, ...]) -> list[Region]:
        if self.result is None:
            return []
        return [Region(d, a, b, QtGui.QColor(colors[d % len(colors)]))
                for d, (a, b) in self.result.ranges.items()]

    def label(self) -> str:
        r = self.result
        if r is None:
            return f"<b>{NPU_PHASE}</b> — {self.state} (target {self._target})"
        path = workspace_io.mlir_path(r.workspace)
        return (f"<b>{NPU_PHASE}</b> — {path} ({self.state}; target {r.program.target.name}, "
                f"{r.target}) — {coverage(r.program).summary()}")
