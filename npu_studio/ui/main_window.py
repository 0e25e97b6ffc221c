"""The main window: layout and wiring. Timeline on top, IR on the left, dispatches on the right, log below.

The state every view shows lives in the `Session` (core, no Qt); the `Studio` runs what the
user asks for as background jobs. The window places the views, forwards the user's intents
and redraws when the session announces a change. Further docks and views register with
`add_dock` and listen to `self.session.events`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.compile.options import TARGETS
from ..core.errors import StudioError, format_error
from ..core.problems import COMPILE, GENERAL
from ..core.ir.dispatch_index import PhaseIndex
from ..core.session import NPU_PHASE, Session
from ..core.textio import read_text
from ..core.workspace.workspace import Workspace
from ..resources import EXAMPLE_MODEL
from .banner import error_banner
from .build_summary import install_build_summary
from .dispatches.binding import DispatchBinding
from .dispatches.panel import DispatchPanel
from .edit.controller import install_edit_support
from .edit.phase_documents import PhaseDocuments
from .executables.view import ExecutablesPanel
from .ir.find_bar import FindBar
from .ir.ir_view import IrView
from .ir.param_view import install_parameter_view
from .layout import (DEFAULT_SIZE, apply_default_layout, fit_to_screen, make_dock_fit, restore_layout, save_layout,
                     scrolling_timeline, size_docks)
from .opening import Opener
from .log_panel import LogPanel
from .npu.panel import TABLE_PHASES, NpuPanel
from .recent import RecentFiles, dropped_path
from .schedule.controller import ScheduleController
from .schedule.dock import ScheduleDock
from .studio import Studio
from .timeline import PhaseTimeline
from .timeline_binding import TimelineBinding
from .tool_docks import install_tool_docks
from .welcome import WelcomePage

ORG, APP = "NPU Studio", "NPU Studio"


class MainWindow(QtWidgets.QMainWindow):
    sig_compile_finished = QtCore.Signal(bool)  # True on success
    sig_index_finished = QtCore.Signal()  # the dispatch indexes are current

    def __init__(self, settings: QtCore.QSettings | None = None):
        super().__init__()
        self.settings = settings or QtCore.QSettings(ORG, APP)
        self.session = Session()
        self.studio = Studio(self.session, self)
        self.jobs = self.studio.jobs
        self.setWindowTitle(APP)
        self.setAcceptDrops(True)
        self.resize(DEFAULT_SIZE)
        self._build_widgets()
        self._build_actions()
        self.npu = NpuPanel(self.session, self.studio, self.settings, self)
        self.timeline_binding = TimelineBinding(self.timeline, self.session, self.npu.timeline_info)
        self.dispatches = DispatchBinding(self.session, self.studio, self.dispatch_panel, self.ir_view, self.npu)
        self.menuBar().insertMenu(self.view_menu.menuAction(), self.npu.menu)
        self.addToolBar(self.npu.toolbar)
        self.add_dock(self.npu.dock, QtCore.Qt.DockWidgetArea.RightDockWidgetArea, visible=False)
        self.schedule = ScheduleDock(self)
        self.schedule_controller = ScheduleController(self.session, self.jobs, self.schedule, self)
        self.add_dock(self.schedule, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
        self.executables = ExecutablesPanel(self.session, self.studio, self)
        install_tool_docks(self)
        install_build_summary(self)
        self._wire()
        install_edit_support(self)
        self.view_menu.addSeparator()
        self.view_menu.addAction("&Reset Layout", self.reset_layout)
        apply_default_layout(self)
        self._layout_restored = False
        self._restore_settings()

    # -- construction -----------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.timeline = PhaseTimeline()
        self.error_banner = error_banner()

        self.ir_view = IrView()
        self.find_bar = FindBar(self.ir_view)
        self.phase_docs = PhaseDocuments(self.ir_view)
        install_parameter_view(self.ir_view, lambda: self.workspace.params_path if self.workspace else None)
        self.phase_label = QtWidgets.QLabel()
        # A long path never widens the window: the label gives way (its tooltip has it whole).
        self.phase_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        ir_box = QtWidgets.QWidget()
        ir_layout = QtWidgets.QVBoxLayout(ir_box)
        ir_layout.setContentsMargins(0, 0, 0, 0)
        ir_layout.addWidget(self.phase_label)
        ir_layout.addWidget(self.ir_view, 1)
        ir_layout.addWidget(self.find_bar)

        self.dispatch_panel = DispatchPanel()
        self.dispatch_table = self.dispatch_panel.table
        self.detail = self.dispatch_panel.detail
        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(ir_box)
        self.splitter.addWidget(self.dispatch_panel)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)

        workbench = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(workbench)
        layout.setContentsMargins(4, 4, 4, 4)
        self.timeline_scroller = scrolling_timeline(self.timeline)
        layout.addWidget(self.timeline_scroller)
        layout.addWidget(self.splitter, 1)

        self.welcome = WelcomePage()
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
        self.log_dock = QtWidgets.QDockWidget("Log", self)
        self.log_dock.setObjectName("logDock")
        self.log_dock.setWidget(self.log)
        make_dock_fit(self.log_dock)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, self.log_dock)
        self.splitter.setSizes([820, 560])

        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.hide()
        self.status_label = QtWidgets.QLabel()
        self.status_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
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
        self.view_menu = self.menuBar().addMenu("&View")
        self.view_menu.addAction(self.log_dock.toggleViewAction())

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
        # Ctrl+F finds in the focused editor: this one for the main IR view and its table, the
        # executable editor has its own (each bound to its widget, so neither shadows the other).
        self.find_action = QtGui.QAction("Find", self, shortcut=QtGui.QKeySequence.StandardKey.Find,
                                         triggered=self.find_bar.open)
        self.find_action.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.centralWidget().addAction(self.find_action)
        self._update_actions()

    def add_dock(self, dock: QtWidgets.QDockWidget, area=QtCore.Qt.DockWidgetArea.RightDockWidgetArea,
                 visible: bool = True) -> None:
        """Where further docks and views register: placed, listed in the View menu. Their contents
        scroll when the dock is smaller than them (see layout.py), never widening the window."""
        make_dock_fit(dock)
        self.addDockWidget(area, dock)
        self.view_menu.addAction(dock.toggleViewAction())
        dock.setVisible(visible)

    # -- the shell (shell.py): what the areas may ask of the window ---------------------------

    def parent_widget(self) -> QtWidgets.QWidget:
        return self

    def add_menu(self, title: str) -> QtWidgets.QMenu:
        return self.menuBar().insertMenu(self.view_menu.menuAction(), QtWidgets.QMenu(title, self)).menu()

    def add_toolbar(self, toolbar: QtWidgets.QToolBar) -> None:
        self.addToolBar(toolbar)

    def add_dispatch_action(self, action: QtGui.QAction, on_double_click: bool = False) -> None:
        table = self.dispatch_table
        table.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
        table.addAction(action)
        if on_double_click:
            table.cellDoubleClicked.connect(lambda _row, _col: action.trigger())

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def append_log(self, text: str, error: bool = False) -> None:
        self.log.append_text(text, error=error)

    def _wire(self) -> None:
        s, studio = self.session.events, self.studio
        s.workspace.connect(self._on_workspace)
        s.phases.connect(self._update_actions)
        s.indexes.connect(self._on_indexes)
        s.npu.connect(self._on_npu)
        self.timeline.sig_phase_selected.connect(self.show_phase)
        self.ir_view.sig_region_clicked.connect(self.select_dispatch)
        self.dispatch_panel.sig_dispatch_selected.connect(
            lambda d: self.select_dispatch(d) if d is not None else None)
        self.log.sig_location_clicked.connect(self.goto_location)
        self.welcome.sig_open_example.connect(lambda: self.open_path(EXAMPLE_MODEL))
        self.welcome.sig_open_path.connect(lambda p: self.open_path(Path(p)))
        studio.sig_log.connect(lambda text, error: self.log.append_text(text, error=error))
        self.schedule_controller.sig_message.connect(self.log.append_text)
        self.session.events.problems.connect(self._on_problems)
        studio.sig_status.connect(self.status_label.setText)
        studio.sig_progress.connect(self._on_progress)
        studio.sig_busy.connect(lambda _: self._update_actions())
        studio.sig_compile_finished.connect(self._on_compiled)
        studio.sig_compile_finished.connect(self.sig_compile_finished)
        studio.sig_index_finished.connect(self.sig_index_finished)

    # -- what views and tests read: the session's state ----------------------------------------

    @property
    def workspace(self) -> Workspace | None:
        return self.session.workspace

    @property
    def indexes(self) -> dict[str, PhaseIndex]:
        return self.session.indexes

    @property
    def drafts(self) -> dict[str, str]:
        return self.session.drafts

    @property
    def current_phase(self) -> str | None:
        return self.session.selection.phase

    @property
    def selected_dispatch(self) -> int | None:
        return self.session.selection.dispatch

    def is_busy(self) -> bool:
        return self.studio.is_busy()

    def docks(self) -> list[QtWidgets.QDockWidget]:
        return self.findChildren(QtWidgets.QDockWidget)

    def show_all_docks(self) -> None:
        for dock in self.docks():
            dock.show()

    # -- settings ---------------------------------------------------------------------------------

    def _restore_settings(self) -> None:
        self._layout_restored = restore_layout(self, self.settings)
        splitter = self.settings.value("splitter")
        if isinstance(splitter, QtCore.QByteArray):
            self.splitter.restoreState(splitter)
        if self.settings.value("target") in TARGETS:
            self.target_combo.setCurrentText(self.settings.value("target"))
        self.recent = RecentFiles(self.settings, self.recent_menu, self.welcome, self.open_path)
        self.opener = Opener(self)

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802
        self.save_drafts()
        save_layout(self, self.settings)
        self.opener.save_last(self.settings)
        self.settings.setValue("splitter", self.splitter.saveState())
        self.settings.setValue("target", self.target_combo.currentText())
        self.jobs.stop_all()
        super().closeEvent(event)

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802
        super().showEvent(event)
        fit_to_screen(self)  # a layout saved on a larger screen still fits this one
        if not self._layout_restored and not getattr(self, "_docks_sized", False):
            self._docks_sized = True
            QtCore.QTimer.singleShot(0, lambda: size_docks(self))  # the default shares of the size it opens at

    def reset_layout(self) -> None:
        """View > Reset Layout: every dock back in its default place, open or closed."""
        apply_default_layout(self)
        self.splitter.setSizes([self.width() * 3 // 5, self.width() * 2 // 5])

    def save_drafts(self) -> None:
        """Keep uncompiled edits in the workspace; reopening it brings them back."""
        if self.workspace is None:
            return
        self._stash_current_edit()
        for message in self.session.save_drafts():
            self.show_error(message)

    def _stash_current_edit(self) -> None:
        phase = self.current_phase
        if phase is None or phase == NPU_PHASE or not self.ir_view.is_editable() or self.workspace is None:
            return
        text = self.ir_view.text()
        try:
            unchanged = text == self.workspace.snapshot_path(phase).read_text()
        except OSError:
            unchanged = False
        if not unchanged and self.drafts.get(phase) != text:
            self.session.set_draft(phase, text)

    def recent_files(self) -> list[str]:
        return self.recent.paths()

    # -- intents ----------------------------------------------------------------------------------

    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model", str(EXAMPLE_MODEL.parent), "Models (*.onnx *.mlir *.mlirbc);;All files (*)")
        if path:
            self.open_path(Path(path))

    def open_workspace_dialog(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Open workspace")
        if path:
            self.open_path(Path(path))

    def open_path(self, path: Path, workspace_dir: Path | None = None) -> bool:
        """Open a model or a workspace folder (opening.py: an unchanged model's workspace reopens, uncompiled)."""
        return self.opener.open(path, workspace_dir)

    def restore_last_session(self) -> bool:
        """At a start without arguments: the workspace, phase and dispatch on show at the last close."""
        return self.opener.restore_last(self.settings)

    def recompile(self) -> None:
        if self.workspace is None or self.is_busy():
            return
        self._stash_current_edit()  # uncompiled edits stay drafts across the compile
        self.studio.recompile(self.target_combo.currentText())

    def resume_from_current(self) -> None:
        phase = self.current_phase
        if self.workspace is None or phase in (None, NPU_PHASE) or self.is_busy():
            return
        if self.studio.resume(phase, self.ir_view.text()):
            self.ir_view.set_editable(False)  # the text is recorded: no draft to stash
            self.edit_action.setChecked(False)

    def cancel(self) -> None:
        self.studio.cancel()

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setVisible(total > 0)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self._update_actions()

    # -- redrawing from the session --------------------------------------------------------------

    def _on_workspace(self) -> None:
        """Another model (or one importing): every view drops the old one at once."""
        ws, name = self.workspace, self.session.model_name
        self.pages.setCurrentIndex(1 if name else 0)
        self.setWindowTitle(f"{name} — {APP}" if name else APP)
        if ws is not None and ws.manifest.target in TARGETS:
            self.target_combo.setCurrentText(ws.manifest.target)
        self.edit_action.setChecked(False)
        self.ir_view.set_editable(False)
        self.phase_docs.clear()
        self.ir_view.set_text("")
        self.ir_view.set_regions([])
        self.phase_label.setText(f"<b>{name}</b> — importing…" if ws is None and name else "")
        self.dispatch_panel.clear()
        if ws is not None and ws.snapshots():
            self.show_phase("flow" if "flow" in ws.snapshots() else next(iter(ws.snapshots())))
        self._update_actions()

    def _on_compiled(self, ok: bool) -> None:
        """The new snapshots replace what the IR view shows (a draft stays a draft)."""
        if ok and self.workspace is not None:
            phase = self.current_phase
            self.show_phase(phase if phase == NPU_PHASE or phase in self.workspace.snapshots() else "flow")

    def _on_indexes(self) -> None:
        if self.current_phase is not None:
            self._show_dispatches(self.current_phase)

    def _on_npu(self) -> None:
        if self.current_phase == NPU_PHASE:
            self._show_npu_phase()
        elif self.current_phase in TABLE_PHASES:
            self._show_dispatches(self.current_phase)

    def show_phase(self, phase: str) -> None:
        ws = self.workspace
        if phase == NPU_PHASE and ws is not None:
            self._stash_current_edit()
            self.session.select_phase(NPU_PHASE)
            self._show_npu_phase()
            return
        if ws is None or phase not in ws.manifest.phases:
            return
        same = self.current_phase == phase  # shown again (a rebuild): the view keeps its place
        if not same:
            self._stash_current_edit()  # keep what the user typed
        self.session.select_phase(phase)
        self.timeline.select(phase)
        path = ws.snapshot_path(phase)
        draft = self.drafts.get(phase)
        try:
            text = draft if draft is not None else read_text(path)
        except StudioError as exc:  # missing, unreadable or not UTF-8: one line naming it
            self.show_error(format_error(exc, prog=""))
            return
        if self.edit_action.isChecked() or draft is not None:
            self.phase_docs.show(phase, text)  # its own document: the undo history of this phase
            self.ir_view.set_editable(True)
            self.edit_action.setChecked(True)
        else:
            self.phase_docs.leave()
            self.ir_view.set_text(text, elide=True, keep_place=same)
        state = "edited, not compiled: autosaved draft" if draft is not None else self.session.phase_state(phase)
        if state == "failed":  # the compile did not write it: what shows is the build before
            state = "failed: the text below is from the previous build"
        self.phase_label.setText(f"<b>{phase}</b> — {path.relative_to(ws.root)} ({state})")
        self.phase_label.setToolTip(str(path))
        self._show_dispatches(phase)
        self._update_actions()

    def _show_npu_phase(self) -> None:
        """The NPU program (npu dialect MLIR), read-only; the table is flow's."""
        self.edit_action.setChecked(False)
        self.timeline.select(NPU_PHASE)
        self.ir_view.set_editable(False)
        self.phase_docs.leave()
        self.ir_view.set_text(self.npu.text())
        self.phase_label.setText(self.npu.label())
        self._show_dispatches(NPU_PHASE)
        self._update_actions()

    def _show_dispatches(self, phase: str) -> None:
        self.dispatches.show_phase(phase)

    def select_dispatch(self, dispatch: int | None) -> None:
        """Select a dispatch: the table, the IR region and the detail follow (via the session)."""
        self.session.select_dispatch(dispatch)
        self.dispatches.show_selection()

    # -- editing ----------------------------------------------------------------------------------

    def _set_editing(self, on: bool) -> None:
        # Edits happen on the full text, in the phase's own document (its undo history), at the
        # scroll and cursor line the display had.
        if on and self.workspace is not None and self.current_phase not in (None, NPU_PHASE):
            self.phase_docs.show(self.current_phase, self.ir_view.text())
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

    # -- errors and locations ---------------------------------------------------------------------

    def _on_problems(self) -> None:
        """The banner shows the newest problem whose condition still holds; the status bar agrees."""
        message = self.session.problems.newest()
        self.error_banner.setText(message or "")
        self.error_banner.setVisible(message is not None)
        if not self.session.problems.is_raised(COMPILE) and self.status_label.text() == "Failed":
            self.status_label.setText("")

    def show_error(self, message: str, condition: str = GENERAL) -> None:
        self.studio.error(message, condition)

    def clear_error(self) -> None:
        """The user starts something new (an open): every earlier problem's banner goes."""
        self.session.problems.clear()

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

    # -- drag and drop ----------------------------------------------------------------------------

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802
        if dropped_path(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802
        path = dropped_path(event.mimeData())
        if path is not None:
            event.acceptProposedAction()
            self.open_path(path)
