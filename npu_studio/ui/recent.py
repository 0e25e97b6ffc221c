"""The recently opened files and workspaces: kept in the settings, offered in a menu and on the welcome page."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6 import QtCore, QtWidgets

from ..core.workspace.workspace import Workspace, is_model_file
from .welcome import recent_label

MAX_RECENT = 10


class RecentFiles:
    def __init__(self, settings: QtCore.QSettings, menu: QtWidgets.QMenu, welcome,
                 open_path: Callable[[Path], None]):
        self.settings, self.menu, self.welcome, self.open_path = settings, menu, welcome, open_path
        self.refresh()

    def paths(self) -> list[str]:
        value = self.settings.value("recent") or []
        return [value] if isinstance(value, str) else list(value)

    def remember(self, path: Path) -> None:
        recent = [str(path)] + [p for p in self.paths() if p != str(path)]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self.refresh()

    def refresh(self) -> None:
        self.menu.clear()
        for p in self.paths():
            action = self.menu.addAction(recent_label(p), lambda p=p: self.open_path(Path(p)))
            action.setData(p)
            action.setToolTip(p)
        self.menu.setEnabled(bool(self.paths()))
        self.welcome.set_recent(self.paths())


def dropped_path(mime: QtCore.QMimeData) -> Path | None:
    """The first local model file or workspace folder among dropped URLs."""
    for url in mime.urls():
        if url.isLocalFile():
            p = Path(url.toLocalFile())
            if is_model_file(p) or Workspace.is_workspace(p):
                return p
    return None
