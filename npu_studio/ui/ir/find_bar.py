"""FindBar: incremental search in a QPlainTextEdit (an IrView).

Matches are found in the view's plain text with Python's `re` (on an escaped
pattern), which counts tens of thousands of matches on a 100,000-line
document in milliseconds; QTextDocument.find in a loop would take seconds.
The text is read back from the document only when it changed.
"""

from __future__ import annotations

import bisect
import re

from PySide6 import QtCore, QtGui, QtWidgets

Key = QtCore.Qt.Key


class FindBar(QtWidgets.QWidget):
    """Find field, case toggle, previous/next, "3 of 17", close."""

    sig_closed = QtCore.Signal()  # no arguments

    def __init__(
        self, view: QtWidgets.QPlainTextEdit, parent: QtWidgets.QWidget | None = None
    ):
        super().__init__(parent)
        self._view = view
        self._text_key: tuple | None = None
        self._text = ""
        self._utf16: list[int] | None = None  # only if the text has non-BMP chars
        self._match_key: tuple | None = None
        self._starts: list[int] = []
        self._current = -1  # index into _starts of the selected match
        self.setAccessibleName("Find bar")

        self.field = QtWidgets.QLineEdit(self)
        self.field.setPlaceholderText("Find")
        self.field.setAccessibleName("Find text")
        self.field.setClearButtonEnabled(True)
        self.field.installEventFilter(self)
        self.case_button = self._button("Aa", "Match case (Alt+C)", checkable=True)
        self.case_button.setShortcut(QtGui.QKeySequence("Alt+C"))
        self.prev_button = self._button("↑", "Previous match (Shift+Enter, Shift+F3)")
        self.next_button = self._button("↓", "Next match (Enter, F3)")
        self.status = QtWidgets.QLabel(self)
        self.status.setAccessibleName("Match count")
        self.status.setMinimumWidth(self.fontMetrics().horizontalAdvance("99999 of 99999"))
        close = self._button("✕", "Close (Esc)")

        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        for w in (self.field, self.case_button, self.prev_button, self.next_button):
            layout.addWidget(w)
        layout.addWidget(self.status, 1)
        layout.addWidget(close)

        self.field.textChanged.connect(self._on_text_changed)
        self.case_button.toggled.connect(self._on_text_changed)
        self.prev_button.clicked.connect(self.find_previous)
        self.next_button.clicked.connect(self.find_next)
        close.clicked.connect(self.close_bar)
        for seq, slot in (("F3", self.find_next), ("Shift+F3", self.find_previous)):
            sc = QtGui.QShortcut(QtGui.QKeySequence(seq), self)
            sc.setContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(slot)
        self.hide()

    def _button(self, text: str, tip: str, checkable: bool = False) -> QtWidgets.QToolButton:
        b = QtWidgets.QToolButton(self)
        b.setText(text)
        b.setToolTip(tip)
        b.setAccessibleName(tip.split(" (")[0])
        b.setCheckable(checkable)
        return b

    # -- public API -------------------------------------------------------

    def open(self) -> None:
        """Show and focus the field, prefilled with the view's selection."""
        selected = self._view.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.field.setText(selected)
        self.show()
        self.field.setFocus()
        self.field.selectAll()
        self._update_status()

    def close_bar(self) -> None:
        self.hide()
        self._view.setFocus()
        self.sig_closed.emit()

    def set_case_sensitive(self, on: bool) -> None:
        self.case_button.setChecked(on)

    def case_sensitive(self) -> bool:
        return self.case_button.isChecked()

    def match_count(self) -> int:
        self._ensure_matches()
        return len(self._starts)

    def current_match(self) -> int:
        """1-based index of the selected match, 0 if none is selected."""
        return self._current + 1

    def find_next(self) -> bool:
        return self._step(forward=True)

    def find_previous(self) -> bool:
        return self._step(forward=False)

    # -- internals --------------------------------------------------------

    def _doc_text(self) -> str:
        if hasattr(self._view, "stream"):
            # Matches are counted and stepped through in the whole text: a big one still coming in
            # (streaming.py) is loaded at once (for a million lines, a few seconds after it opened).
            self._view.stream.finish()
        doc = self._view.document()
        key = (id(doc), doc.revision(), doc.characterCount())
        if key != self._text_key:
            self._text = self._view.toPlainText()
            self._text_key = key
            self._match_key = None
            self._utf16 = None
            if not self._text.isascii() and max(self._text) > "\uffff":
                # QTextDocument positions count UTF-16 units.
                offsets, pos = [], 0
                for ch in self._text:
                    offsets.append(pos)
                    pos += 2 if ch > "\uffff" else 1
                offsets.append(pos)
                self._utf16 = offsets
        return self._text

    def _ensure_matches(self) -> None:
        text = self._doc_text()
        needle = self.field.text()
        key = (self._text_key, needle, self.case_sensitive())
        if key == self._match_key:
            return
        self._match_key = key
        self._current = -1
        if not needle:
            self._starts = []
            return
        flags = 0 if self.case_sensitive() else re.IGNORECASE
        self._starts = [m.start() for m in re.finditer(re.escape(needle), text, flags)]

    def _to_doc(self, i: int) -> int:
        return self._utf16[i] if self._utf16 is not None else i

    def _from_doc(self, pos: int) -> int:
        if self._utf16 is None:
            return pos
        return bisect.bisect_left(self._utf16, pos)

    def _step(self, forward: bool, from_start: bool = False) -> bool:
        self._ensure_matches()
        starts = self._starts
        if not starts:
            self._update_status()
            return False
        cursor = self._view.textCursor()
        if from_start:  # typing: stay on a match at the selection start
            i = bisect.bisect_left(starts, self._from_doc(cursor.selectionStart()))
        elif forward:
            i = bisect.bisect_right(starts, self._from_doc(cursor.selectionStart()))
        else:
            i = bisect.bisect_left(starts, self._from_doc(cursor.selectionStart())) - 1
        i %= len(starts)  # wraps around both ways
        self._select(i)
        return True

    def _select(self, i: int) -> None:
        self._current = i
        start = self._starts[i]
        end = start + len(self.field.text())
        cursor = self._view.textCursor()
        cursor.setPosition(self._to_doc(start))
        cursor.setPosition(self._to_doc(end), QtGui.QTextCursor.MoveMode.KeepAnchor)
        self._view.setTextCursor(cursor)
        self._view.centerCursor()
        self._update_status()

    def _update_status(self) -> None:
        if not self.field.text():
            self.status.setText("")
            return
        n = self.match_count()
        if n == 0:
            self.status.setText("No matches")
        elif self._current < 0:
            self.status.setText(f"{n} matches")
        else:
            self.status.setText(f"{self._current + 1} of {n}")

    @QtCore.Slot()
    def _on_text_changed(self, *_args) -> None:
        if not self._step(forward=True, from_start=True):
            self._update_status()

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802
        if obj is self.field and event.type() == QtCore.QEvent.Type.KeyPress:
            key = event.key()
            if key in (Key.Key_Return, Key.Key_Enter):
                shift = event.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier
                self.find_previous() if shift else self.find_next()
                return True
            if key == Key.Key_Escape:
                self.close_bar()
                return True
        return super().eventFilter(obj, event)


def install_find_shortcut(
    view: QtWidgets.QPlainTextEdit, bar: FindBar
) -> list[QtGui.QShortcut]:
    """Ctrl+F (opens `bar`), F3 and Shift+F3 on `view`; returns the shortcuts."""
    shortcuts = []
    for seq, slot in (
        (QtGui.QKeySequence.StandardKey.Find, bar.open),
        (QtGui.QKeySequence("F3"), bar.find_next),
        (QtGui.QKeySequence("Shift+F3"), bar.find_previous),
    ):
        sc = QtGui.QShortcut(QtGui.QKeySequence(seq), view)
        sc.setContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        sc.activated.connect(slot)
        shortcuts.append(sc)
    return shortcuts
