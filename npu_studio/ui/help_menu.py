"""Help: About (our version and IREE's), Documentation (the docs shipped with the package, rendered
as Markdown with links between them) and Keyboard Shortcuts (read from the window's own actions,
so the list is never out of date)."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ..core.versions import version_text
from ..resources import DOCS_DIR
from .shell import Shell

FIRST_DOC = "model-debugging.md"


def install_help_menu(shell: Shell) -> QtWidgets.QMenu:
    menu = shell.add_menu("&Help")
    parent = shell.parent_widget()
    menu.addAction("&Documentation", QtGui.QKeySequence.StandardKey.HelpContents, lambda: DocsDialog(parent).show())
    menu.addAction("&Keyboard Shortcuts", lambda: shortcuts_dialog(parent).show())
    menu.addSeparator()
    menu.addAction("&About NPU Studio", lambda: QtWidgets.QMessageBox.about(
        parent, "About NPU Studio", "<h3>NPU Studio</h3><p>Bring up an NPU behind the IREE compiler.</p><pre>"
        + version_text().replace("&", "&amp;").replace("<", "&lt;") + "</pre>"))
    return menu


def shortcut_rows(window: QtWidgets.QWidget) -> list[tuple[str, str]]:
    """(action, keys) of every action of the window with a shortcut, sorted by action."""
    rows = {}
    for action in window.findChildren(QtGui.QAction):
        keys = ", ".join(k.toString(QtGui.QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts())
        name = action.text().replace("&", "").rstrip("…").strip()
        if keys and name:
            rows[name] = keys
    return sorted(rows.items(), key=lambda row: row[0].lower())


def shortcuts_dialog(window: QtWidgets.QWidget) -> QtWidgets.QDialog:
    dialog = QtWidgets.QDialog(window)
    dialog.setWindowTitle("Keyboard Shortcuts")
    dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    rows = shortcut_rows(window)
    table = QtWidgets.QTableWidget(len(rows), 2, dialog)
    table.setHorizontalHeaderLabels(["Action", "Keys"])
    table.verticalHeader().hide()
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    for r, (name, keys) in enumerate(rows):
        table.setItem(r, 0, QtWidgets.QTableWidgetItem(name))
        table.setItem(r, 1, QtWidgets.QTableWidgetItem(keys))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    layout = QtWidgets.QVBoxLayout(dialog)
    layout.addWidget(table)
    dialog.resize(520, 480)
    return dialog


class DocsDialog(QtWidgets.QDialog):
    """The shipped docs: a list on the left, the chosen one as Markdown on the right; links between docs
    open inside, others in the desktop's browser."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, folder: Path = DOCS_DIR):
        super().__init__(parent)
        self.setWindowTitle("NPU Studio documentation")
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        self.folder = folder
        self.list = QtWidgets.QListWidget(self)
        self.view = QtWidgets.QTextBrowser(self)
        self.view.setOpenLinks(False)
        self.view.anchorClicked.connect(self._follow)
        docs = sorted(p.name for p in folder.glob("*.md")) if folder.is_dir() else []
        self.list.addItems(docs)
        self.list.currentTextChanged.connect(self.show_doc)
        split = QtWidgets.QSplitter(self)
        split.addWidget(self.list)
        split.addWidget(self.view)
        split.setSizes([200, 700])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(split)
        screen = (parent.screen() if parent is not None else None) or QtGui.QGuiApplication.primaryScreen()
        room = screen.availableGeometry() if screen is not None else QtCore.QRect(0, 0, 1280, 800)
        self.resize(min(1000, room.width() - 40), min(760, room.height() - 60))
        if docs:
            self.list.setCurrentRow(docs.index(FIRST_DOC) if FIRST_DOC in docs else 0)
        else:
            self.view.setPlainText(f"No documentation installed ({folder} is missing).")

    def show_doc(self, name: str) -> None:
        path = self.folder / name
        try:
            self.view.setMarkdown(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            self.view.setPlainText(f"{path}: cannot read: {exc}")

    def _follow(self, url: QtCore.QUrl) -> None:
        name = url.path().rsplit("/", 1)[-1]
        items = self.list.findItems(name, QtCore.Qt.MatchFlag.MatchExactly) if url.isRelative() else []
        if items:
            self.list.setCurrentItem(items[0])
            if url.fragment():
                self.view.scrollToAnchor(url.fragment())
        else:
            QtGui.QDesktopServices.openUrl(url)
