"""Page Up / Page Down in an IrView: the view moves by a screen and the cursor keeps its place on it.

QPlainTextEdit's own page step walks the cursor down a line at a time (keeping its x), and each step
looks up the formats of a highlighted line's runs: on a page of highlighted MLIR that took most of a
frame (10 ms against 0.2 ms for unformatted text). Here the scroll bar moves by its page step and the
cursor is put back at the same point of the screen: one hit test. At the first or last page the
cursor goes to the start or end of the text, as in Qt. With Shift (extending a selection) Qt's own
step runs.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

PAGE_KEYS = {QtCore.Qt.Key.Key_PageDown: 1, QtCore.Qt.Key.Key_PageUp: -1}


def handles(event: QtGui.QKeyEvent) -> bool:
    """A plain Page Up or Page Down (no modifier)."""
    return event.key() in PAGE_KEYS and event.modifiers() == QtCore.Qt.KeyboardModifier.NoModifier


def page(view: QtWidgets.QPlainTextEdit, event: QtGui.QKeyEvent) -> None:
    direction = PAGE_KEYS[QtCore.Qt.Key(event.key())]
    bar = view.verticalScrollBar()
    spot = view.cursorRect().center()
    if not view.viewport().rect().contains(spot):  # the cursor is off screen: it goes to the top line
        spot = QtCore.QPoint(spot.x(), view.fontMetrics().height() // 2)
    before = bar.value()
    bar.setValue(before + direction * max(1, bar.pageStep()))
    if bar.value() == before:
        cursor = view.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End if direction > 0
                            else QtGui.QTextCursor.MoveOperation.Start)
    else:
        cursor = view.cursorForPosition(spot)
    view.setTextCursor(cursor)
