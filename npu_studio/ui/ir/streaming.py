"""Showing a big text in an IrView a slice at a time, so that no turn of the event loop waits for all of it.

`QPlainTextEdit.setPlainText` lays a whole text into its document in one call on the GUI thread: 0.2 s
for 100,000 lines, 3 to 5 s for a million, during which the window is frozen. Nor can the document be
filled on another thread: `setPlainText` keeps the GIL, and handing the filled document to the view
costs half a second more for a million lines (measured). So a text of more than STREAM_OVER_LINES
lines is shown as its first FIRST_LINES lines at once (the first paint), then appended a slice at a time
from a zero timer, each slice sized to take about SLICE_MS and elided on its own (elision keeps line numbers, so a slice's lines
are the file's). Lines only ever arrive at the end: every line number already shown stays right.

What needs a line not yet shown waits for it: `when_loaded(line, action)` runs the action once the line
is in (the latest request wins: a user who jumps twice wants the second place). Folding hides late
lines as they arrive (`sig_lines_added`). Editing needs the whole document: `finish()` appends the rest.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable

from PySide6 import QtCore, QtGui

from npu_studio.core.ir.elision import Elision, elide_text

STREAM_OVER_LINES = 20_000  # texts with more lines are shown a slice at a time
FIRST_LINES = 2_000  # the first slice: several screens, laid out in milliseconds
SLICE_LINES = 8_000  # the first of the later slices; then sized to take about SLICE_MS each
SLICE_MS = 25  # a turn of the event loop spent appending: a busy machine gets smaller slices
MIN_SLICE_LINES, MAX_SLICE_LINES = 1_000, 32_000
_clock = time.perf_counter


def _without_line_end(piece: str) -> str:
    """`piece` without its final line end: `\r\n` whole (a lone `\r` left behind is a line end to Qt:
    an empty line more at every slice boundary of a CRLF text), else `\n`."""
    return piece[:-2] if piece.endswith("\r\n") else piece.removesuffix("\n")


def _end_after_lines(text: str, start: int, lines: int) -> int:
    """The offset just past the `lines`-th newline from `start`, or len(text)."""
    pos = start
    find = text.find
    for _ in range(lines):
        pos = find("\n", pos) + 1
        if pos == 0:
            return len(text)
    return pos


@contextmanager
def _keeping_cursor(view):
    """`view`'s cursor and scroll stay where they are through lines appended at the end (a cursor at the
    end of the text would be carried along by every slice)."""
    cursor, scroll = view.textCursor(), view.verticalScrollBar().value()
    position, anchor = cursor.position(), cursor.anchor()
    yield
    if view.textCursor().position() != position or view.textCursor().anchor() != anchor:
        cursor.setPosition(anchor)
        cursor.setPosition(position, QtGui.QTextCursor.MoveMode.KeepAnchor)
        with view.highlighting.hold():
            view.setTextCursor(cursor)
            view.verticalScrollBar().setValue(scroll)


class TextStream(QtCore.QObject):
    """Feeds `view`'s own display document with `text`'s slices; see the module doc."""

    sig_lines_added = QtCore.Signal(int, int)  # 1-based first and last line just appended

    def __init__(self, view):
        super().__init__(view)
        self._view = view
        self._text = ""
        self._pos = 0  # offset in _text of the next slice
        self._loaded = 0  # lines in the document so far
        self.total_lines = 0  # lines of the whole text
        self.last_slice: tuple[int, str] = (1, "")  # the first line and the text (unelided) last shown
        self._elide = False
        self._pending: tuple[int, Callable[[], None]] | None = None
        self._slice = SLICE_LINES  # lines of the next slice (see SLICE_MS)
        self._timer = QtCore.QTimer(self, singleShot=True, interval=0, timeout=self._step)

    @property
    def loading(self) -> bool:
        return self._pos < len(self._text)

    def first_slice(self, text: str, elide: bool) -> tuple[str, dict[int, list[Elision]]]:
        """The display text and elisions to show now: all of `text` when it is small, else its first
        FIRST_LINES lines, the rest following from the event loop once `start()` is called."""
        self.stop()
        self.total_lines = text.count("\n") + 1
        if self.total_lines <= STREAM_OVER_LINES:
            self._loaded = self.total_lines
            self.last_slice = (1, text)
            return elide_text(text) if elide else (text, {})
        end = _end_after_lines(text, 0, FIRST_LINES)
        head = _without_line_end(text[:end])
        self._text, self._pos, self._elide = text, end, elide
        self._loaded, self._slice = FIRST_LINES, SLICE_LINES
        self.last_slice = (1, head)
        return elide_text(head) if elide else (head, {})

    def start(self) -> None:
        if self.loading:
            self._timer.start()

    def stop(self) -> None:
        """Forget the rest (another text or document is shown) and any place waiting for it."""
        self._timer.stop()
        self._text, self._pos, self._pending = "", 0, None
        self._set_undo(True)

    def finish(self) -> None:
        """Append everything that is left now (editing needs the whole text)."""
        while self.loading:
            self._step(lines=1 << 62)

    def when_loaded(self, line: int, action: Callable[[], None]) -> None:
        """Run `action` now if 1-based `line` is shown, else once it is (replacing any earlier wait)."""
        if not self.loading or line <= self._loaded:
            action()
        else:
            self._pending = (line, action)

    def _set_undo(self, on: bool) -> None:
        # Appends are not edits: with undo on, the document would keep a copy of every slice.
        document = self._view.display_document()
        if document.isUndoRedoEnabled() != on:
            document.setUndoRedoEnabled(on)

    @QtCore.Slot()
    def _step(self, lines: int | None = None) -> None:
        if not self.loading:
            return
        began = _clock()
        lines = lines or self._slice
        text, start = self._text, self._pos
        end = _end_after_lines(text, start, lines)
        chunk = _without_line_end(text[start:end]) if end < len(text) else text[start:]
        display, elisions = elide_text(chunk) if self._elide else (chunk, {})
        first = self._loaded + 1
        self._set_undo(False)
        with self._view.display_highlighter().appending(display), _keeping_cursor(self._view):
            cursor = QtGui.QTextCursor(self._view.display_document())
            cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
            cursor.insertText("\n" + display)
        self._pos = end
        self._loaded = first + display.count("\n")
        self.last_slice = (first, chunk)
        if elisions:
            self._view.add_elisions({first - 1 + n: spans for n, spans in elisions.items()})
        self.sig_lines_added.emit(first, self._loaded)
        took_ms = max(1.0, (_clock() - began) * 1000)
        self._slice = min(MAX_SLICE_LINES, max(MIN_SLICE_LINES, int(lines * SLICE_MS / took_ms)))
        if self.loading:
            self._timer.start()
        else:
            self._text, self._pos = "", 0
            self._set_undo(True)
        if self._pending is not None and (not self.loading or self._pending[0] <= self._loaded):
            action, self._pending = self._pending[1], None
            action()
