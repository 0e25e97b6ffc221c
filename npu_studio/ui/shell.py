"""What a UI area may ask of the window that assembles it: the narrow shell.

Every area (a package under `ui/`: edit, dispatches, executables, npu, schedule, compile_debug,
sweep, trace, module, assembly) is built from `(session, studio, shell)`, as Spyder's plugins are built
against a small API rather than the main window. State comes from the Qt-free `Session` and its
events; intents go to the `Studio` (jobs, errors, log) or the session; the shell only places
what an area builds (docks, menus, toolbars, actions on a dispatch) and shows its messages.

`MainWindow` implements this protocol. An area never names the window or another area's
widgets (tests/test_area_isolation.py checks it); an area that needs another's state asks
the session.
"""

from __future__ import annotations

from typing import Protocol

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.problems import GENERAL
from .jobs import JobManager

Area = QtCore.Qt.DockWidgetArea


class Shell(Protocol):
    jobs: JobManager  # the one manager of background jobs (also `studio.jobs`)

    def parent_widget(self) -> QtWidgets.QWidget:
        """The parent for an area's docks and dialogs (they close with the window)."""

    def add_dock(self, dock: QtWidgets.QDockWidget, area: Area = Area.RightDockWidgetArea,
                 visible: bool = True) -> None:
        """Place a dock and list it in the View menu; its contents scroll when it is small."""

    def add_menu(self, menu: QtWidgets.QMenu | str) -> QtWidgets.QMenu:
        """A menu of the area's own (or a new one with this title) in the menu bar, before View."""

    def add_toolbar(self, toolbar: QtWidgets.QToolBar) -> None:
        """A toolbar of the area's own, after the main one."""

    def add_dispatch_action(self, action: QtGui.QAction, on_double_click: bool = False) -> None:
        """An action on the selected dispatch, in the dispatch table's context menu (and run on a
        row's double-click when `on_double_click`). The action reads `session.selection.dispatch`."""

    def set_status(self, text: str) -> None:
        """One line in the status bar."""

    def append_log(self, text: str, error: bool = False) -> None:
        """Text in the Log dock (`file:line:col` locations in it are links)."""

    def show_error(self, message: str, condition: str = GENERAL) -> None:
        """A problem in the error banner, bound to `condition` (core/problems.py) until it ends."""

    def ask_to_trust(self, root, action: str) -> bool:
        """Whether the user trusts a workspace not created here, told what would run (`jobs` asks it
        before a job runs what such a workspace holds; core/workspace/trust.py)."""
