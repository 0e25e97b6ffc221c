"""What the IR editor needs beyond a text view: error marks, autosave of drafts, undo/redo, replace.

Each piece attaches to an IrView and knows nothing about the shell around it; the edit controller
(controller.py) wires them.
"""

from __future__ import annotations

import html
import re
from typing import Callable

from PySide6 import QtCore, QtGui, QtWidgets

AUTOSAVE_MS = 800  # a pause in typing this long saves the draft
AUTOSAVE_MAX_BEHIND_MS = 1500  # and steady typing never leaves it further behind than this


class ErrorMarks(QtCore.QObject):
    """A wavy underline from the error's column to the end of its token, the line brought into view,
    and the message in a strip under the editor (`label`, placed by the pane's layout): drawn over
    the text it would cover the lines being fixed. Clicking its location goes back to the error."""

    def __init__(self, view: QtWidgets.QPlainTextEdit):
        super().__init__(view)
        self._view = view
        self.position: tuple[int, int] | None = None  # (line, col), 1-based
        self.message = ""
        self.label = QtWidgets.QLabel()
        self.label.setAccessibleName("Error message")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
                                           | QtCore.Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.label.setStyleSheet("background:#fde7e9;color:#8a0010;border:1px solid #e8a0a8;padding:1px 4px")
        self.label.linkActivated.connect(lambda _link: self.reveal())
        self.label.hide()

    def show_error(self, line: int, col: int, message: str) -> None:
        self.position, self.message = (line, col), message
        view = self._view
        block = view.document().findBlockByNumber(line - 1)
        start = block.position() + min(max(col - 1, 0), max(block.length() - 1, 0))
        rest = block.text()[col - 1:] if col >= 1 else block.text()
        token = re.match(r"[%@#^]?[\w.$\-]+|\S", rest)
        cursor = QtGui.QTextCursor(view.document())
        cursor.setPosition(start)
        cursor.setPosition(start + (len(token.group()) if token else 1), QtGui.QTextCursor.MoveMode.KeepAnchor)
        sel = QtWidgets.QTextEdit.ExtraSelection()
        sel.cursor = cursor
        sel.format.setUnderlineStyle(QtGui.QTextCharFormat.UnderlineStyle.WaveUnderline)
        sel.format.setUnderlineColor(QtGui.QColor("#d00000"))
        sel.format.setToolTip(message)
        view.set_marks([sel])
        self.label.setText(f'<a href="error">{line}:{col}</a>: {html.escape(message)}')
        self.label.setToolTip(message)
        self.label.show()
        if hasattr(view, "goto"):
            view.goto(line, col)  # the cursor on the error, its line in the middle
        # Brought back if the events the failure queued (phase states, layout) moved the view away.
        QtCore.QTimer.singleShot(0, self.reveal)

    def reveal(self) -> None:
        """Scroll the error's line to the middle of the editor, unless it is on screen already."""
        if self.position is not None and hasattr(self._view, "goto"):
            line, col = self.position
            rect = self._view.viewport().rect()
            block = self._view.document().findBlockByNumber(line - 1)
            shown = self._view.blockBoundingGeometry(block).translated(self._view.contentOffset())
            if not rect.contains(shown.toRect()):  # already on screen: the view stays where it is
                self._view.goto(line, col)

    def clear(self) -> None:
        self.position, self.message = None, ""
        self.label.hide()
        self._view.set_marks([])

    def is_shown(self) -> bool:
        return self.position is not None


def follow_contents_change(view: QtWidgets.QPlainTextEdit, slot) -> None:
    """Connect `slot` to the view's document changes; an IrView lends phases their own documents."""
    if hasattr(view, "connect_contents_change"):
        view.connect_contents_change(slot)
    else:
        view.document().contentsChange.connect(slot)


class DraftAutosaver(QtCore.QObject):
    """Calls save(text) a short while after the last keystroke (debounced), and on flush()."""

    def __init__(self, view: QtWidgets.QPlainTextEdit, save: Callable[[str], None], delay_ms: int = AUTOSAVE_MS,
                 max_behind_ms: int = AUTOSAVE_MAX_BEHIND_MS):
        super().__init__(view)
        self._view = view
        self._save = save
        self._delay, self._max_behind = delay_ms, max_behind_ms
        self._since = QtCore.QElapsedTimer()  # since the oldest unsaved change
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)
        self.enabled = True
        follow_contents_change(view, self._on_change)

    def _on_change(self, _pos: int, removed: int, added: int) -> None:
        if self.enabled and (removed or added) and not self._view.isReadOnly():
            if not self._timer.isActive():
                self._since.start()
            left = max(0, self._max_behind - self._since.elapsed())
            self._timer.start(min(self._delay, left))

    def pending(self) -> bool:
        return self._timer.isActive()

    def cancel(self) -> None:
        self._timer.stop()

    def flush(self) -> None:
        self._timer.stop()
        if self.enabled and not self._view.isReadOnly():
            self._save(self._view.text() if hasattr(self._view, "text") else self._view.toPlainText())


class ReplaceBar(QtWidgets.QWidget):
    """Replace the selected match (then find the next) or every match, each as one undo step."""

    def __init__(self, view: QtWidgets.QPlainTextEdit, find_text: Callable[[], str],
                 find_next: Callable[[], None], parent=None):
        super().__init__(parent)
        self._view, self._find_text, self._find_next = view, find_text, find_next
        self.setAccessibleName("Replace bar")
        self.field = QtWidgets.QLineEdit()
        self.field.setPlaceholderText("Replace with")
        self.field.setAccessibleName("Replace text")
        one = QtWidgets.QPushButton("Replace")
        one.clicked.connect(self.replace_one)
        every = QtWidgets.QPushButton("Replace all")
        every.clicked.connect(self.replace_all)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 2)
        layout.addWidget(self.field, 1)
        layout.addWidget(one)
        layout.addWidget(every)

    def replace_one(self) -> None:
        needle = self._find_text()
        cursor = self._view.textCursor()
        if needle and cursor.hasSelection() and cursor.selectedText() == needle and not self._view.isReadOnly():
            cursor.insertText(self.field.text())
        self._find_next()

    def replace_all(self) -> int:
        needle = self._find_text()
        if not needle or self._view.isReadOnly():
            return 0
        # Each occurrence replaced in place, all in one undo step: Undo puts the text back and the
        # cursor where the replacements were (not at the end, as replacing the whole text did).
        doc, flags = self._view.document(), QtGui.QTextDocument.FindFlag.FindCaseSensitively
        found, cursor = [], doc.find(needle, 0, flags)
        while not cursor.isNull():
            found.append(cursor)
            cursor = doc.find(needle, cursor, flags)
        if found:
            scroll = self._view.verticalScrollBar().value()
            block = QtGui.QTextCursor(doc)
            block.setPosition(found[0].selectionStart())  # where Undo puts the cursor back
            block.beginEditBlock()
            for cursor in found:  # cursors follow the edits before them
                cursor.insertText(self.field.text())
            block.endEditBlock()
            self._view.verticalScrollBar().setValue(scroll)
        return len(found)


def edit_menu_actions(parent: QtWidgets.QWidget, view: QtWidgets.QPlainTextEdit) -> list[QtGui.QAction]:
    """Undo and Redo for the editor, enabled as the document says."""
    undo = QtGui.QAction("&Undo", parent, shortcut=QtGui.QKeySequence.StandardKey.Undo, triggered=view.undo)
    redo = QtGui.QAction("&Redo", parent, shortcut=QtGui.QKeySequence.StandardKey.Redo, triggered=view.redo)
    undo.setEnabled(False)
    redo.setEnabled(False)
    view.undoAvailable.connect(undo.setEnabled)
    view.redoAvailable.connect(redo.setEnabled)
    return [undo, redo]
