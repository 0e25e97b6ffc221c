"""A plain editor for an NPU target TOML file with an Apply button."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets


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
        layout.addLayout(buttons)

    def load(self, path: Path) -> None:
        """Show `path`'s text (an unreadable file shows empty, with the reason)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            note = ""
        except OSError as exc:
            text, note = "", f" — cannot read: {exc.strerror or exc}"
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
