"""A plain editor for an NPU target TOML file with an Apply button; a rejected text is marked at its key."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.errors import StudioError
from ...core.textio import read_text
from ..banner import OneLineBanner


class TargetEditor(QtWidgets.QWidget):
    """Shows one target file; Apply hands the text to whoever saves and checks it.

    The editor never changes its text by itself after `load`: a rejected
    Apply leaves what the user typed in place.
    """

    sig_apply = QtCore.Signal(str)  # the editor's text

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._path: Path | None = None
        self.path_label = QtWidgets.QLabel()
        self.path_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path_label.setWordWrap(True)
        self.edit = QtWidgets.QPlainTextEdit()
        self.edit.setAccessibleName("NPU target text")
        self.edit.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.edit.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.error_label = OneLineBanner()  # `file:line: key: reason` of a rejected Apply
        self.error_label.setAccessibleName("Target error")
        self.error_label.setStyleSheet("color:#8a0010;background:#fde7e9;padding:2px")
        self.error_label.hide()
        self.edit.document().contentsChanged.connect(self.clear_error)  # the user is fixing it
        self.apply_button = QtWidgets.QPushButton("Apply")
        self.apply_button.setToolTip("Save the target and re-run the NPU pipeline (Ctrl+Return)")
        self.apply_button.clicked.connect(self.apply)
        QtGui.QShortcut(QtGui.QKeySequence("Ctrl+Return"), self.edit, self.apply)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.apply_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.path_label)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)

    def show_error(self, exc: Exception) -> None:
        """A rejected Apply: the message under the text, the key underlined in red at its line
        (the whole line when the key is not on it), the cursor there."""
        self.error_label.set_message(str(exc))
        self.error_label.show()
        line = getattr(exc, "line", None)
        if not line:
            self.edit.setExtraSelections([])
            return
        block = self.edit.document().findBlockByNumber(int(line) - 1)
        if not block.isValid():
            return
        key = str(getattr(exc, "key", "")).rsplit(".", 1)[-1]
        found = block.text().find(key) if key and not key.startswith("<") else -1
        start, length = (found, len(key)) if found >= 0 else (0, len(block.text()))
        cursor = QtGui.QTextCursor(block)
        cursor.setPosition(block.position() + start)
        cursor.setPosition(block.position() + start + length, QtGui.QTextCursor.MoveMode.KeepAnchor)
        mark = QtWidgets.QTextEdit.ExtraSelection()
        mark.cursor = cursor
        mark.format.setUnderlineStyle(QtGui.QTextCharFormat.UnderlineStyle.WaveUnderline)
        mark.format.setUnderlineColor(QtGui.QColor("#c62828"))
        mark.format.setToolTip(str(exc))
        self.edit.setExtraSelections([mark])
        self.edit.setTextCursor(QtGui.QTextCursor(cursor.block()))
        self.edit.centerCursor()

    def error_line(self) -> int | None:
        """The 1-based line marked as wrong, if any."""
        marks = self.edit.extraSelections()
        return marks[0].cursor.blockNumber() + 1 if marks else None

    def marked_text(self) -> str:
        marks = self.edit.extraSelections()
        return marks[0].cursor.selectedText() if marks else ""

    def clear_error(self) -> None:
        if self.error_label.isVisible() or self.edit.extraSelections():
            self.error_label.hide()
            self.edit.setExtraSelections([])

    def load(self, path: Path) -> None:
        """Show `path`'s text (an unreadable file shows empty, with the reason)."""
        path = Path(path)
        try:
            text, note = read_text(path), ""
        except StudioError as exc:  # missing, a folder, not UTF-8: the reason, once
            text, note = "", f" — cannot read: {exc.reason}"
        self._path = path
        self.edit.setPlainText(text)
        self.edit.document().setModified(False)
        self.set_path(path, note)

    def set_path(self, path: Path, note: str = "") -> None:
        """The file the text belongs to (after a save into a copy, the copy)."""
        self._path = Path(path)
        self.path_label.setText(f"{path}{note}")

    def path(self) -> Path | None:
        return self._path

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.setPlainText(text)

    def apply(self) -> None:
        self.sig_apply.emit(self.text())
