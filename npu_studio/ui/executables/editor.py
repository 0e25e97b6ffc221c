"""The editor of one executable's source or configuration.

An editable IrView (MLIR highlighting, line numbers, Qt's undo stack) with
the find bar, undo/redo buttons, a choice between the source and the
configured form, and a one-line error that puts the cursor on its line and
column.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.workspace.substitutions import CONFIGURATION, SOURCE
from ..ir.find_bar import FindBar
from ..ir.ir_view import IrView


class ExecutableEditor(QtWidgets.QWidget):
    sig_kind_changed = QtCore.Signal(str)  # SOURCE or CONFIGURATION

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.view = IrView()
        self.view.setAccessibleName("Executable editor")
        self.view.set_editable(True)
        self.find_bar = FindBar(self.view)
        self.kind_combo = QtWidgets.QComboBox()
        self.kind_combo.addItem("Source", SOURCE)
        self.kind_combo.addItem("Configuration (tile sizes)", CONFIGURATION)
        self.kind_combo.setAccessibleName("Executable form")
        self.kind_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.kind_combo.setMinimumContentsLength(12)
        self.kind_combo.currentIndexChanged.connect(lambda _i: self.sig_kind_changed.emit(self.kind()))
        self.title = QtWidgets.QLabel()
        # a long executable name is cut rather than widening the dock (the list above shows it whole)
        self.title.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.title.setMinimumWidth(60)
        self.undo_button = self._tool("Undo", QtGui.QKeySequence.StandardKey.Undo, self.view.undo)
        self.redo_button = self._tool("Redo", QtGui.QKeySequence.StandardKey.Redo, self.view.redo)
        self.find_button = self._tool("Find", QtGui.QKeySequence.StandardKey.Find, self.find_bar.open)
        self.view.undoAvailable.connect(self.undo_button.setEnabled)
        self.view.redoAvailable.connect(self.redo_button.setEnabled)
        self.error = QtWidgets.QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color:#8a0010")
        self.error.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()

        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.kind_combo)
        for b in (self.undo_button, self.redo_button, self.find_button):
            bar.addWidget(b)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.find_bar)
        layout.addWidget(self.error)

    def _tool(self, text: str, key, slot) -> QtWidgets.QToolButton:
        b = QtWidgets.QToolButton(self)
        b.setText(text)
        b.setToolTip(f"{text} ({QtGui.QKeySequence(key).toString()})")
        b.clicked.connect(slot)
        if text == "Find":  # Ctrl+F in this editor finds here (the IR view's Find is bound to that view)
            shortcut = QtGui.QShortcut(QtGui.QKeySequence(key), self)
            shortcut.setContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
        b.setEnabled(text == "Find")
        return b

    def kind(self) -> str:
        return self.kind_combo.currentData()

    def set_kind(self, kind: str) -> None:
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(kind))

    def set_text(self, title: str, text: str) -> None:
        """A new text: undo starts afresh from it. The same executable's text again (after a
        rebuild) changes nothing; a new text of it keeps the scroll, cursor and selection."""
        same = bool(title) and title == self.title.text()
        if same and text == self.view.text():
            return
        self.title.setText(title)
        self.title.setToolTip(title)
        doc = self.view.document()
        cursor = self.view.textCursor()
        # By line and column: a rebuilt dump moves characters, rarely lines.
        ends = [(doc.findBlock(p).blockNumber(), p - doc.findBlock(p).position())
                for p in (cursor.anchor(), cursor.position())]
        scroll = self.view.verticalScrollBar().value()
        self.view.set_text(text, elide=False)
        if same:
            doc, cursor = self.view.document(), self.view.textCursor()
            for (line, col), mode in zip(ends, (QtGui.QTextCursor.MoveMode.MoveAnchor,
                                                QtGui.QTextCursor.MoveMode.KeepAnchor)):
                block = doc.findBlockByNumber(line)
                block = block if block.isValid() else doc.lastBlock()
                cursor.setPosition(block.position() + min(col, block.length() - 1), mode)
            self.view.setTextCursor(cursor)
            self.view.verticalScrollBar().setValue(scroll)
        self.view.document().clearUndoRedoStacks()
        self.undo_button.setEnabled(False)
        self.redo_button.setEnabled(False)
        self.clear_error()

    def text(self) -> str:
        return self.view.text()

    def show_error(self, message: str, line: int | None = None, col: int | None = None) -> None:
        self.error.setText(message)
        self.error.show()
        if line is not None:
            self.view.goto(line, col or 1)

    def clear_error(self) -> None:
        self.error.hide()
        self.error.clear()

    def cursor_line_col(self) -> tuple[int, int]:
        c = self.view.textCursor()
        return c.blockNumber() + 1, c.positionInBlock() + 1
