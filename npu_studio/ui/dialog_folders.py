"""Where the app's file dialogs start: the open workspace's folder, else the folder last chosen in
one of them, else the home folder; never inside the installed package (its example is one menu
item away, File > Open Example, and nothing the user makes belongs there)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore

from ..resources import RESOURCES

LAST_FOLDER_KEY = "dialogs/last_folder"


def _package_folders() -> list[Path]:
    import npu_studio

    package = Path(npu_studio.__file__).parent
    return [package, package.resolve(), RESOURCES.resolve()]


def inside_package(folder: Path) -> bool:
    try:
        folder = folder.resolve()
    except OSError:
        return True
    return any(folder == p or p in folder.parents for p in _package_folders())


class DialogFolders:
    """`start()` for a dialog's folder; `remember(path)` with what the user chose."""

    def __init__(self, settings: QtCore.QSettings | None = None,
                 workspace_root: Callable[[], Path | None] = lambda: None):
        self.settings, self.workspace_root = settings, workspace_root

    def start(self) -> str:
        last = self.settings.value(LAST_FOLDER_KEY) if self.settings is not None else None
        for folder in (self.workspace_root(), Path(last) if last else None):
            if folder is not None and Path(folder).is_dir() and not inside_package(Path(folder)):
                return str(folder)
        return str(Path.home())

    def remember(self, chosen: str | Path) -> None:
        """Keep the folder of a chosen file (or a chosen folder) for the next dialog."""
        path = Path(chosen)
        folder = path if path.is_dir() else path.parent
        if self.settings is not None and not inside_package(folder):
            self.settings.setValue(LAST_FOLDER_KEY, str(folder))
