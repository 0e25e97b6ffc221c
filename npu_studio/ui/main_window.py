"""The main window: the shell. Timeline on top, the IR pane on the left, dispatches on the right, log below.

The state every view shows lives in the `Session` (core, no Qt); the `Studio` runs what the
user asks for as background jobs. The areas (areas.py) are built from `(session, studio, shell)`
and listen to the session; this window is their shell (shell.py): it places their docks, menus
and toolbars, shows messages, and keeps the frame (File menu, target and compile, the welcome
page, the banner, the status bar, layout and settings). A new dock goes in an area package,
built against the shell, and is assembled in areas.py.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.compile.options import TARGETS
from ..core.problems import COMPILE, GENERAL
from ..core.ir.dispatch_index import PhaseIndex
from ..core.session import Session
from ..core.workspace.workspace import Workspace
from ..resources import EXAMPLE_MODEL
from .areas import build_areas, central_areas
from .banner import error_banner
from . import trust_dialog
from .build_summary import install_build_summary
from .help_menu import install_help_menu
from .layout import (DEFAULT_SIZE, apply_default_layout, fit_to_screen, front_if_room, make_dock_fit, restore_layout,
                     save_layout, scrolling_timeline, show_readable, size_docks)
from .opening import Opener
from .log_handler import install_log_handler
from .log_panel import LogPanel
from .recent import RecentFiles, dropped_path
from .studio import Studio
from .timeline import PhaseTimeline
from .timeline_binding import TimelineBinding
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
        self.jobs.ask_trust = self.ask_to_trust
        self.setWindowTitle(APP)
        self.setAcceptDrops(True)
        self.resize(DEFAULT_SIZE)
        self._build_widgets()
        self._build_actions()
        areas = build_areas(self.session, self.studio, self, self.settings, self._central, self.timeline)
        self.__dict__.update(vars(areas))  # the areas by name, for the window's own wiring and for tests
        self.edit_controller = areas.edit
        install_build_summary(self)
        self._wire()
        self.view_menu.addSeparator()
        self.view_menu.addAction("&Reset Layout", self.reset_layout)
        install_help_menu(self)
        apply_default_layout(self)
        self._layout_restored = False
        self._restore_settings()

    # -- construction -----------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.timeline = PhaseTimeline()
        # Before the areas: a new workspace resets the timeline before the IR pane selects a phase on it.
        self.timeline_binding = TimelineBinding(self.timeline, self.session)
        self.error_banner = error_banner()

        self._central = central_areas(self.session, self.studio, self)
        pane, self.dispatch_panel, _binding = self._central
        self.ir_view, self.find_bar, self.phase_docs, self.phase_label = (pane.view, pane.find_bar, pane.phase_docs,
                                                                           pane.phase_label)
        self.dispatch_table = self.dispatch_panel.table
        self.detail = self.dispatch_panel.detail
        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(pane.widget)
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
        self.pages.currentChanged.connect(self._on_page)
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
        # The order users expect: File, Edit, View, then the areas' own menus (NPU), Help last.
        self.edit_menu = self.menuBar().addMenu("&Edit")
        self.view_menu = self.menuBar().addMenu("&View")
        self.help_menu: QtWidgets.QMenu | None = None
        self.view_menu.addAction(self._view_action(self.log_dock))

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
        pane = self._central[0]
        self.edit_action, self.resume_action, self.find_action = pane.edit_action, pane.resume_action, pane.find_action
        bar.addAction(self.edit_action)
        bar.addAction(self.resume_action)
        self.centralWidget().addAction(self.find_action)  # Ctrl+F from the dispatch table finds in the IR too
        self._update_actions()

    def add_dock(self, dock: QtWidgets.QDockWidget, area=QtCore.Qt.DockWidgetArea.RightDockWidgetArea,
                 visible: bool = True) -> None:
        """Where further docks and views register: placed, listed in the View menu. Their contents
        scroll when the dock is smaller than them (see layout.py), never widening the window."""
        make_dock_fit(dock)
        self.addDockWidget(area, dock)
        self.view_menu.addAction(self._view_action(dock))
        dock.setVisible(visible)

    def _view_action(self, dock: QtWidgets.QDockWidget) -> QtGui.QAction:
        """The dock's View menu entry: opening it raises the dock at a readable size, not as a background tab."""
        action = dock.toggleViewAction()
        action.triggered.connect(lambda checked: checked and show_readable(self, dock))
        # A tab brought to the front by a click grows the same way, once the window has its layout.
        dock.visibilityChanged.connect(
            lambda shown: shown and getattr(self, "_docks_sized", False) and self.isVisible()
            and show_readable(self, dock))
        return action

    # -- the shell (shell.py): what the areas may ask of the window ---------------------------

    def parent_widget(self) -> QtWidgets.QWidget:
        return self

    def add_menu(self, menu: QtWidgets.QMenu | str) -> QtWidgets.QMenu:
        """A menu of an area, after View and before Help; asked by title, File, Edit, View and Help are the
        window's own (the area adds its actions to them)."""
        if isinstance(menu, str):
            own = {m.title(): m for m in (self.edit_menu, self.view_menu, self.help_menu) if m is not None}
            if menu in own:
                return own[menu]
            menu = QtWidgets.QMenu(menu, self)
            if menu.title() == "&Help":
                self.help_menu = menu
                self.menuBar().addMenu(menu)
                return menu
        if self.help_menu is not None:
            self.menuBar().insertMenu(self.help_menu.menuAction(), menu)
        else:
            self.menuBar().addMenu(menu)
        return menu

    def add_toolbar(self, toolbar: QtWidgets.QToolBar) -> None:
        self.addToolBar(toolbar)

    def add_dispatch_action(self, action: QtGui.QAction, on_double_click: bool = False) -> None:
        self.dispatch_table.add_row_action(action, on_double_click)

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def append_log(self, text: str, error: bool = False) -> None:
        self.log.append_text(text, error=error)

    def show_error(self, message: str, condition: str = GENERAL) -> None:
        self.studio.error(message, condition)

    def ask_to_trust(self, root: Path, action: str) -> bool:
        return trust_dialog.ask(self, root, action)

    def _wire(self) -> None:
        s, studio = self.session.events, self.studio
        s.workspace.connect(self._on_workspace)
        s.phases.connect(self._update_actions)
        s.problems.connect(self._on_problems)
        self.timeline.sig_phase_selected.connect(self.show_phase)
        self.log.sig_location_clicked.connect(self.ir.goto_location)
        self.welcome.sig_open_example.connect(lambda: self.open_path(EXAMPLE_MODEL))
        self.welcome.sig_open_path.connect(lambda p: self.open_path(Path(p)))
        studio.sig_log.connect(lambda text, error: self.log.append_text(text, error=error))
        install_log_handler(self.log)  # each tool the app starts, with its command line (the `logging` records)
        studio.sig_status.connect(self.status_label.setText)
        studio.sig_progress.connect(self._on_progress)
        studio.sig_busy.connect(lambda _: self._update_actions())
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
            QtCore.QTimer.singleShot(0, lambda: size_docks(self, self.ir_view))  # the shares of the size it opens at

    def _on_page(self, index: int) -> None:
        # The workbench's first showing in the default layout: the bottom docks give the IR its lines.
        if index == 1 and not self._layout_restored and not getattr(self, "_workbench_sized", False):
            self._workbench_sized = True
            QtCore.QTimer.singleShot(0, self._size_workbench)

    def _size_workbench(self) -> None:
        front_if_room(self, self.ir_view, self.schedule)  # the Gantt in front where it fits beside the IR
        size_docks(self, self.ir_view)

    def reset_layout(self) -> None:
        """View > Reset Layout: every dock back in its default place, open or closed."""
        apply_default_layout(self)
        self.splitter.setSizes([self.width() * 3 // 5, self.width() * 2 // 5])
        QtCore.QTimer.singleShot(0, lambda: size_docks(self, self.ir_view))  # laid out: the IR keeps its lines

    def save_drafts(self) -> None:
        """Keep uncompiled edits (IR and executables) in the workspace; reopening it brings them back."""
        if self.workspace is None:
            return
        self.ir.stash_current_edit()
        self.executables.stash_edit()
        for message in self.session.save_drafts():
            self.show_error(message)

    def recent_files(self) -> list[str]:
        return self.recent.paths()

    # -- intents ----------------------------------------------------------------------------------

    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model", self.dialog_folders.start(), "Models (*.onnx *.mlir *.mlirbc);;All files (*)")
        if path:
            self.dialog_folders.remember(path)
            self.open_path(Path(path))

    def open_workspace_dialog(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Open workspace", self.dialog_folders.start())
        if path:
            self.dialog_folders.remember(Path(path).parent)  # the next dialog starts beside it
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
        self.ir.stash_current_edit()  # uncompiled edits stay drafts across the compile
        self.studio.recompile(self.target_combo.currentText())

    def resume_from_current(self) -> None:
        self.ir.resume_from_current()

    def cancel(self) -> None:
        self.studio.cancel()

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setVisible(total > 0)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self._update_actions()

    # -- redrawing from the session --------------------------------------------------------------

    def _on_workspace(self) -> None:
        """Another model (or one importing): the frame names it; the areas follow the session themselves."""
        ws, name = self.workspace, self.session.model_name
        self.pages.setCurrentIndex(1 if name else 0)
        self.setWindowTitle(f"{name} — {APP}" if name else APP)
        if ws is not None and ws.manifest.target in TARGETS:
            self.target_combo.setCurrentText(ws.manifest.target)
        self._update_actions()

    def show_phase(self, phase: str) -> None:
        self.ir.show_phase(phase)

    def select_dispatch(self, dispatch: int | None) -> None:
        """Select a dispatch: the table, the IR region and the detail follow the session."""
        self.session.select_dispatch(dispatch)

    def _update_actions(self) -> None:
        busy = self.is_busy()
        self.cancel_action.setEnabled(busy)
        self.compile_action.setEnabled(self.workspace is not None and not busy)
        self.open_action.setEnabled(not busy)

    # -- errors and locations ---------------------------------------------------------------------

    def _on_problems(self) -> None:
        """The banner shows the newest problem whose condition still holds; the status bar agrees."""
        message = self.session.problems.newest()
        self.error_banner.setText(message or "")
        self.error_banner.setVisible(message is not None)
        if not self.session.problems.is_raised(COMPILE) and self.status_label.text() == "Failed":
            self.status_label.setText("")

    def clear_error(self) -> None:
        """The user starts something new (an open): every earlier problem's banner goes."""
        self.session.problems.clear()

    def goto_location(self, path: str, line: int, col: int) -> None:
        self.ir.goto_location(path, line, col)

    # -- drag and drop ----------------------------------------------------------------------------

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802
        if dropped_path(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802
        path = dropped_path(event.mimeData())
        if path is not None:
            event.acceptProposedAction()
            self.open_path(path)
