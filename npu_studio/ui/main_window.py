"""The main window: timeline on top, IR on the left, dispatches on the right, log below."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.compiler import TARGETS
from ..core.errors import Cancelled, StudioError
from ..core.ir_index import PhaseIndex, index_file, index_workspace_phases, link_phase_indexes
from ..core.mlir_text import SnapshotParseError
from ..core.phases import SNAPSHOT_PHASES
from ..core.workspace import Workspace, is_model_file
from ..resources import EXAMPLE_MODEL
from .dispatch_table import DispatchTable, detail_text
from .executables_view import ExecutablesPanel
from .find_bar import FindBar
from .ir_view import IrView, Region
from .log_panel import LogPanel
from .npu_panel import NPU_PHASE, TABLE_PHASES, NpuPanel
from .param_view import install_parameter_view
from .timeline import PhaseTimeline
from .welcome import WelcomePage
from .workers import Worker

ORG, APP = "NPU Studio", "NPU Studio"
MAX_RECENT = 10
REGION_COLORS = ("#fff3c4", "#d9f2ff", "#e6ffd9", "#ffe0f0", "#ece0ff", "#ffe8d6")


def phase_summary(index: PhaseIndex) -> str:
    """Tooltip lines for a phase: executables, lines, the busiest dialects."""
    counts = sorted(index.op_counts_by_dialect.items(), key=lambda kv: -kv[1])
    ops = ", ".join(f"{dialect} {n}" for dialect, n in counts[:8])
    return f"Executables: {index.num_executables}\nLines: {index.num_lines:,}\nOps: {ops}"


class MainWindow(QtWidgets.QMainWindow):
    sig_compile_finished = QtCore.Signal(bool)  # True on success
    sig_index_finished = QtCore.Signal()  # dispatch index of every phase is ready

    def __init__(self, settings: QtCore.QSettings | None = None):
        super().__init__()
        self.settings = settings or QtCore.QSettings(ORG, APP)
        self.workspace: Workspace | None = None
        self.indexes: dict[str, PhaseIndex] = {}
        self.index_errors: dict[str, str] = {}
        self.drafts: dict[str, str] = {}  # phase -> edited text not yet compiled
        self.current_phase: str | None = None
        self.selected_dispatch: int | None = None
        self._worker: Worker | None = None
        self._index_worker: Worker | None = None
        self._compile_done = 0
        self._compile_ok = False
        self._job = None  # the running CompileJob, set from the worker thread
        self._cancel_requested = False
        self.setWindowTitle(APP)
        self.setAcceptDrops(True)
        self.resize(1400, 900)
        self._build_widgets()
        self._build_actions()
        self.npu = NpuPanel(self, self.settings)
        self.npu.sig_finished.connect(self._on_npu_finished)
        self.executables = ExecutablesPanel(self)
        self._restore_settings()

    # -- construction -----------------------------------------------------------

    def _build_widgets(self) -> None:
        self.timeline = PhaseTimeline()
        self.timeline.sig_phase_selected.connect(self.show_phase)
        self.error_banner = QtWidgets.QLabel()
        self.error_banner.setWordWrap(True)
        self.error_banner.setStyleSheet("background:#fde7e9;color:#8a0010;padding:6px;border:1px solid #e8a0a8")
        self.error_banner.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_banner.hide()

        self.ir_view = IrView()
        self.ir_view.sig_region_clicked.connect(self._on_region_clicked)
        self.find_bar = FindBar(self.ir_view)
        install_parameter_view(self.ir_view, lambda: self.workspace.params_path if self.workspace else None)
        self.phase_label = QtWidgets.QLabel()
        ir_box = QtWidgets.QWidget()
        ir_layout = QtWidgets.QVBoxLayout(ir_box)
        ir_layout.setContentsMargins(0, 0, 0, 0)
        ir_layout.addWidget(self.phase_label)
        ir_layout.addWidget(self.ir_view, 1)
        ir_layout.addWidget(self.find_bar)

        self.dispatch_table = DispatchTable()
        self.dispatch_table.sig_dispatch_selected.connect(self._on_table_selection)
        self.detail = QtWidgets.QPlainTextEdit(readOnly=True)
        self.detail.setAccessibleName("Dispatch detail")
        self.detail.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.dispatch_table)
        right.addWidget(self.detail)

        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(ir_box)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)

        workbench = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(workbench)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.timeline)
        layout.addWidget(self.splitter, 1)

        self.welcome = WelcomePage()
        self.welcome.sig_open_example.connect(lambda: self.open_path(EXAMPLE_MODEL))
        self.welcome.sig_open_path.connect(lambda p: self.open_path(Path(p)))
        self.pages = QtWidgets.QStackedWidget()
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(workbench)
        central = QtWidgets.QWidget()
        outer = QtWidgets.QVBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.error_banner)
        outer.addWidget(self.pages, 1)
        self.setCentralWidget(central)

        self.log = LogPanel()
        self.log.sig_location_clicked.connect(self.goto_location)
        dock = QtWidgets.QDockWidget("Log", self)
        dock.setObjectName("logDock")
        dock.setWidget(self.log)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        self.log_dock = dock
        self.resizeDocks([dock], [150], QtCore.Qt.Orientation.Vertical)  # until a saved layout says otherwise
        self.splitter.setSizes([820, 560])

        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.hide()
        self.status_label = QtWidgets.QLabel()
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)

    def _build_actions(self) -> None:
        menu = self.menuBar().addMenu("&File")
        self.open_action = menu.addAction("&Open…", QtGui.QKeySequence.StandardKey.Open, self.open_dialog)
        menu.addAction("Open &Workspace…", self.open_workspace_dialog)
        menu.addAction("Open &Example", lambda: self.open_path(EXAMPLE_MODEL))
        self.recent_menu = menu.addMenu("Open &Recent")
        menu.addSeparator()
        menu.addAction("&Quit", QtGui.QKeySequence.StandardKey.Quit, self.close)

        bar = self.addToolBar("Main")
        bar.setObjectName("mainToolbar")
        bar.addAction(self.open_action)
        bar.addWidget(QtWidgets.QLabel(" Target: "))
        self.target_combo = QtWidgets.QComboBox()
        self.target_combo.addItems(TARGETS)
        self.target_combo.setAccessibleName("Target")
        bar.addWidget(self.target_combo)
        self.compile_action = bar.addAction("Compile", self.recompile)
        self.compile_action.setShortcut("Ctrl+B")
        self.cancel_action = bar.addAction("Cancel", self.cancel)
        self.cancel_action.setEnabled(False)
        bar.addSeparator()
        self.edit_action = bar.addAction("Edit IR")
        self.edit_action.setCheckable(True)
        self.edit_action.toggled.connect(self._set_editing)
        self.resume_action = bar.addAction("Resume from this phase", self.resume_from_current)
        self.resume_action.setShortcut("Ctrl+R")
        self.find_action = QtGui.QAction("Find", self, shortcut=QtGui.QKeySequence.StandardKey.Find,
                                         triggered=self.find_bar.open)
        self.addAction(self.find_action)
        self._update_actions()

    # -- settings ------------------------------------------------------------------

    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("windowState")
        if state is not None:
            self.restoreState(state)
        splitter = self.settings.value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        target = self.settings.value("target")
        if target in TARGETS:
            self.target_combo.setCurrentText(target)
        self._refresh_recent()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802
        self.save_drafts()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("windowState", self.saveState())
        self.settings.setValue("splitter", self.splitter.saveState())
        self.settings.setValue("target", self.target_combo.currentText())
        self.cancel()
        for worker in (self._worker, self._index_worker):
            if worker is not None:
                worker.wait(10000)
        self.npu.wait()
        super().closeEvent(event)

    def save_drafts(self) -> None:
        """Keep uncompiled edits in the workspace; reopening it brings them back."""
        ws = self.workspace
        if ws is None:
            return
        self._stash_current_edit()
        for phase, text in self.drafts.items():
            try:
                ws.save_draft(phase, text)
            except OSError as exc:
                self.show_error(f"{ws.root}: cannot keep the edit of {phase}: {exc.strerror or exc}")

    def _stash_current_edit(self) -> None:
        phase = self.current_phase
        if phase is None or not self.ir_view.is_editable() or self.workspace is None:
            return
        text = self.ir_view.text()
        try:
            unchanged = text == self.workspace.snapshot_path(phase).read_text()
        except OSError:
            unchanged = False
        if not unchanged:
            self.drafts[phase] = text

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent") or []
        return [value] if isinstance(value, str) else list(value)

    def _remember(self, path: Path) -> None:
        recent = [str(path)] + [p for p in self.recent_files() if p != str(path)]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self.recent_files():
            self.recent_menu.addAction(p, lambda p=p: self.open_path(Path(p)))
        self.welcome.set_recent(self.recent_files())

    # -- opening -------------------------------------------------------------------

    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model", str(EXAMPLE_MODEL.parent), "Models (*.onnx *.mlir *.mlirbc);;All files (*)")
        if path:
            self.open_path(Path(path))

    def open_workspace_dialog(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Open workspace")
        if path:
            self.open_path(Path(path))

    def open_path(self, path: Path, workspace_dir: Path | None = None) -> None:
        """Open a model (import + compile) or a workspace folder (no compile)."""
        path = Path(path)
        if self.is_busy():
            self.show_error(f"{path}: busy with another compile; cancel it first")
            return
        self.clear_error()
        if path.is_dir():
            try:
                ws = Workspace.open(path)
            except StudioError as exc:
                self.show_error(str(exc))
                return
            self._remember(path)
            self._set_workspace(ws)
            self.log.append_text(f"Opened workspace {ws.root}")
            self._start_indexing()
            self.npu.run()
            return
        if not is_model_file(path):
            self.show_error(f"{path}: not a model (expected .onnx, .mlir, .mlirbc or a workspace folder)")
            return
        self._remember(path)
        target = self.target_combo.currentText()

        def work(report):
            report("import", None)
            ws = Workspace.create(path, workspace_dir, target=target)
            report("imported", ws)
            return self._run_job(ws, ws.compile_job, report)

        self._start_compile(work, f"Importing {path.name}")

    def recompile(self) -> None:
        if self.workspace is None or self.is_busy():
            return
        ws, target = self.workspace, self.target_combo.currentText()

        def work(report):
            return self._run_job(ws, lambda **kw: ws.compile_job(target=target, **kw), report)

        self._stash_current_edit()  # uncompiled edits stay drafts across the compile
        self._start_compile(work, "Compiling")

    def resume_from_current(self) -> None:
        phase = self.current_phase
        if self.workspace is None or phase is None or self.is_busy():
            return
        text = self.ir_view.text()
        ws = self.workspace
        # Record the edit now, on the GUI thread: if the compile fails, the text is kept.
        try:
            ws.record_edit(phase, text)
        except (OSError, StudioError) as exc:
            self.show_error(str(exc))
            return
        self.drafts.pop(phase, None)
        self.ir_view.set_editable(False)  # the text is recorded: no draft to stash
        self.edit_action.setChecked(False)
        self._refresh_timeline()

        def work(report):
            return self._run_job(ws, lambda **kw: ws.resume_job(phase, **kw), report)

        self._start_compile(work, f"Resuming from {phase}")

    def _run_job(self, ws: Workspace, make_job, report) -> Workspace:
        """Worker side: make the compile job, honour an early cancel, run it, record it."""
        job = make_job(on_progress=lambda done, running: report("phase", (done, running)))
        self._job = job
        if self._cancel_requested:  # Cancel pressed while importing, before the job existed
            job.cancel()
        ws.finish(job.run())
        return ws

    def cancel(self) -> None:
        if self._worker is None:
            return
        self._cancel_requested = True
        if self._job is not None:
            self._job.cancel()

    def is_busy(self) -> bool:
        return self._worker is not None

    # -- compile progress ----------------------------------------------------------

    def _start_compile(self, work, message: str) -> None:
        self._job = None
        self._cancel_requested = False
        self.pages.setCurrentIndex(1)
        self._compile_done = 0
        self.progress.setRange(0, len(SNAPSHOT_PHASES))
        self.progress.setValue(0)
        self.progress.show()
        self.status_label.setText(message)
        self._worker = Worker(work, parent=self)
        self._worker.sig_progress.connect(self._on_compile_progress)
        self._worker.sig_done.connect(self._on_compile_done)
        self._worker.sig_failed.connect(self._on_compile_failed)
        self._worker.finished.connect(self._on_worker_finished)
        self._update_actions()
        self._worker.start()

    def _on_compile_progress(self, args) -> None:
        kind, value = args
        if kind == "imported":
            self._set_workspace(value, keep_view=False)
            for phase in SNAPSHOT_PHASES:
                self.timeline.set_phase_info(phase, state="pending")
        elif kind == "phase":
            done, running = value
            if done:
                self._compile_done += 1
                self.timeline.set_phase_info(done, state="done")
            if running:
                self.timeline.set_phase_info(running, state="running")
                self.status_label.setText(f"Compiling: {running}")
            self.progress.setValue(self._compile_done)

    def _on_compile_done(self, ws: Workspace) -> None:
        self.workspace = ws
        self.log.append_text(f"Compiled {ws.user_model_path.name} for {ws.manifest.target} "
                             f"in {ws.manifest.total_seconds:.2f} s")
        self.status_label.setText(f"Compiled in {ws.manifest.total_seconds:.2f} s — {ws.root}")
        self.indexes.clear()
        self.index_errors.clear()
        self._refresh_timeline()
        self.show_phase(self.current_phase or "flow")
        self._start_indexing()
        self.npu.run()
        self._compile_ok = True

    def _on_compile_failed(self, exc: Exception, tb: str) -> None:
        if isinstance(exc, Cancelled):
            self.status_label.setText("Cancelled")
            self.log.append_text("Compile cancelled")
        else:
            message = str(exc) if isinstance(exc, StudioError) else f"internal error: {exc}"
            self.show_error(message)
            log = getattr(exc, "log", "") or ("" if isinstance(exc, StudioError) else tb)
            if log:
                self.log.append_text(log, error=True)
            self.status_label.setText("Failed")
        if self.workspace is not None:
            self._refresh_timeline(failed=not isinstance(exc, Cancelled))
        self._compile_ok = False

    def _on_worker_finished(self) -> None:
        # Only now is the window ready for the next compile: tell listeners here, not earlier.
        self._worker = None
        self._job = None
        self.progress.hide()
        self._update_actions()
        self.sig_compile_finished.emit(self._compile_ok)

    # -- indexing ------------------------------------------------------------------

    def _start_indexing(self) -> None:
        ws = self.workspace
        if ws is None:
            return
        snapshots = dict(ws.snapshots())

        def work(report):
            try:
                return index_workspace_phases(snapshots), {}
            except SnapshotParseError:
                pass
            # Some snapshot does not parse (a bad edit): index the others one by one.
            indexes, errors = {}, {}
            for phase, path in snapshots.items():
                try:
                    indexes[phase] = index_file(path, phase)
                except SnapshotParseError as exc:
                    errors[phase] = str(exc)
            link_phase_indexes(indexes)
            return indexes, errors

        worker = Worker(work, parent=self)
        worker.sig_done.connect(self._on_index_done)
        worker.sig_failed.connect(lambda exc, tb: self.log.append_text(f"dispatch index failed: {exc}", error=True))
        worker.finished.connect(lambda: setattr(self, "_index_worker", None))
        self._index_worker = worker
        worker.start()

    def _on_index_done(self, result) -> None:
        indexes, errors = result
        self.indexes, self.index_errors = indexes, errors
        for phase, message in errors.items():
            self.log.append_text(message, error=True)
        self._refresh_timeline()
        if self.current_phase is not None:
            self._show_dispatches(self.current_phase)
        self.sig_index_finished.emit()

    # -- showing a phase -----------------------------------------------------------

    def _set_workspace(self, ws: Workspace, keep_view: bool = True) -> None:
        self.workspace = ws
        self.indexes.clear()
        self.drafts = ws.drafts()
        self.current_phase = None
        self.ir_view.set_editable(False)
        self.pages.setCurrentIndex(1)
        self.setWindowTitle(f"{ws.user_model_path.name} — {APP}")
        if ws.manifest.target in TARGETS:
            self.target_combo.setCurrentText(ws.manifest.target)
        self.timeline.reset()
        self.npu.reset()
        self._refresh_timeline()
        if keep_view and ws.snapshots():
            self.show_phase(self.current_phase if self.current_phase in ws.snapshots() else "flow")

    def _refresh_timeline(self, failed: bool = False) -> None:
        ws = self.workspace
        if ws is None:
            return
        for phase in SNAPSHOT_PHASES:
            rec = ws.manifest.phases.get(phase)
            index = self.indexes.get(phase)
            if rec is None:
                state = "failed" if failed else "pending"
                self.timeline.set_phase_info(phase, state=state)
                continue
            state = "edited" if phase in self.drafts else rec.state
            if failed and state == "stale":
                state = "failed"
            self.timeline.set_phase_info(
                phase, state=state, seconds=rec.seconds, size_bytes=rec.size_bytes,
                dispatches=index.num_dispatch_sites if index else None,
                details=phase_summary(index) if index else None)

    def show_phase(self, phase: str) -> None:
        ws = self.workspace
        if phase == NPU_PHASE and ws is not None:
            self._show_npu_phase()
            return
        if ws is None or phase not in ws.manifest.phases:
            return
        if self.current_phase != phase:
            self._stash_current_edit()  # keep what the user typed
        self.current_phase = phase
        self.timeline.select(phase)
        path = ws.snapshot_path(phase)
        draft = self.drafts.get(phase)
        try:
            text = draft if draft is not None else path.read_text()
        except OSError as exc:
            self.show_error(f"{path}: {exc.strerror or exc}")
            return
        self.ir_view.set_text(text, elide=draft is None and not self.edit_action.isChecked())
        if self.edit_action.isChecked() or draft is not None:
            self.ir_view.set_editable(True)
            self.edit_action.setChecked(True)
        rec = ws.manifest.phases[phase]
        self.phase_label.setText(f"<b>{phase}</b> — {path} ({rec.state})")
        self._show_dispatches(phase)
        self._update_actions()

    def _show_npu_phase(self) -> None:
        """The NPU program (npu dialect MLIR), read-only; the table is flow's."""
        if self.current_phase != NPU_PHASE:
            self._stash_current_edit()
        self.current_phase = NPU_PHASE
        self.edit_action.setChecked(False)
        self.timeline.select(NPU_PHASE)
        self.ir_view.set_editable(False)
        self.ir_view.set_text(self.npu.text())
        self.phase_label.setText(self.npu.label())
        self._show_dispatches(NPU_PHASE)
        self._update_actions()

    def _on_npu_finished(self, ok: bool) -> None:
        if self.current_phase == NPU_PHASE:
            self._show_npu_phase()
        elif self.current_phase in TABLE_PHASES:
            self._show_dispatches(self.current_phase)

    def _show_dispatches(self, phase: str) -> None:
        npu = phase == NPU_PHASE
        index = self.indexes.get("flow" if npu else phase)
        self.dispatch_table.set_index(index)
        self.dispatch_table.set_extra_columns(*(self.npu.columns() if phase in TABLE_PHASES else ((), {})))
        regions = self.npu.regions(REGION_COLORS) if npu else []
        if index is not None and not npu:
            for rec in index.dispatches:
                r = rec.text_range
                if r is not None:
                    color = QtGui.QColor(REGION_COLORS[rec.index % len(REGION_COLORS)])
                    regions.append(Region(rec.index, r.start_line, r.end_line, color))
        self.ir_view.set_regions(regions)
        if self.selected_dispatch is not None:
            self.select_dispatch(self.selected_dispatch)
        else:
            self.detail.setPlainText(self.index_errors.get(phase, ""))

    def select_dispatch(self, dispatch: int | None) -> None:
        """Select a dispatch in the table, mark its region and show its record."""
        self.selected_dispatch = dispatch
        found = self.dispatch_table.select_dispatch(dispatch)
        rec = self.dispatch_table.record(dispatch) if found else None
        has_region = any(r.key == dispatch for r in self.ir_view.regions())
        self.ir_view.mark_region(dispatch if rec is not None and has_region else None)
        text = detail_text(rec) if rec is not None else ""
        if rec is not None and self.current_phase in TABLE_PHASES:
            npu = self.npu.detail(dispatch)
            text = f"{npu}\n\n{text}" if npu else text
        self.detail.setPlainText(text)

    def _on_table_selection(self, dispatch) -> None:
        if dispatch is not None:
            self.select_dispatch(dispatch)

    def _on_region_clicked(self, key) -> None:
        self.select_dispatch(key)

    # -- editing -------------------------------------------------------------------

    def _set_editing(self, on: bool) -> None:
        if on and self.ir_view.is_elided() and self.current_phase is not None:
            # Edits happen on the full text, never on the elided display.
            self.ir_view.set_text(self.ir_view.text(), elide=False)
        self.ir_view.set_editable(on)
        self._update_actions()

    def _update_actions(self) -> None:
        busy = self.is_busy()
        has_ws = self.workspace is not None
        self.cancel_action.setEnabled(busy)
        self.compile_action.setEnabled(has_ws and not busy)
        self.open_action.setEnabled(not busy)
        snapshot = self.current_phase not in (None, NPU_PHASE)
        self.resume_action.setEnabled(has_ws and not busy and snapshot)
        self.edit_action.setEnabled(has_ws and snapshot)

    # -- errors and locations ------------------------------------------------------

    def show_error(self, message: str) -> None:
        self.error_banner.setText(message)
        self.error_banner.show()
        self.log.append_text(message, error=True)

    def clear_error(self) -> None:
        self.error_banner.hide()
        self.error_banner.clear()

    def goto_location(self, path: str, line: int, col: int) -> None:
        ws = self.workspace
        if ws is None:
            return
        phase = ws.phase_of(Path(path))
        if phase is None or phase == "start":
            self.show_error(f"{path}:{line}:{col}: not a snapshot of this workspace")
            return
        self.show_phase(phase)
        self.ir_view.goto(line, col)

    # -- drag and drop -------------------------------------------------------------

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802
        if self._dropped_path(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802
        path = self._dropped_path(event.mimeData())
        if path is not None:
            event.acceptProposedAction()
            self.open_path(path)

    @staticmethod
    def _dropped_path(mime: QtCore.QMimeData) -> Path | None:
        for url in mime.urls():
            if url.isLocalFile():
                p = Path(url.toLocalFile())
                if is_model_file(p) or Workspace.is_workspace(p):
                    return p
        return None
