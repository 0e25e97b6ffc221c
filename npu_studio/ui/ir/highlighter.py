"""Lazy MLIR syntax highlighting for a QTextDocument.

QSyntaxHighlighter normally re-highlights every block of a document when its
text is set, which for a 100,000-line snapshot means lexing all of it before
the first paint. This highlighter cuts that automatic link and highlights
only the blocks its owner asks for (`ensure_highlighted(first, last)`, called
by IrView for the visible lines), remembering which blocks are done.

Lexing is per line (npu_studio.core.ir.mlir_lexer.lex_line); the start state of
each line (inside the `{-# ... #-}` resource section or not) comes from a
cheap marker scan of the whole text, so any line can be highlighted without
lexing the lines above it. Only the first MAX_LINE_CHARS characters of a line
are lexed and formatted, so a megabyte hex blob cannot stall the GUI.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from pygments.styles import get_style_by_name
from PySide6 import QtCore, QtGui

from npu_studio.core.ir.mlir_lexer import STATE_ROOT, end_state, lex_line
from npu_studio.ui.ir.utf16 import has_wide, utf16_offsets

MAX_LINE_CHARS = 2000
_ELIDED = re.compile(r"…\(\d+ (?:bytes|characters) elided\)")


def _line_states(text: str, start: int = STATE_ROOT) -> tuple[list[int] | None, int]:
    """Start state of every line of `text` whose first line starts in `start` (None when all lines
    start at the root), and the state after its last line."""
    if start == STATE_ROOT:
        first = text.find("{-#")
        if first < 0:
            return None, STATE_ROOT
        # Lines before the first marker's line all start at the root: only the rest is split and walked
        # (IREE prints the resource section last, so on a big snapshot that is a few lines, not a million).
        head = text.rfind("\n", 0, first) + 1
        states = [STATE_ROOT] * text.count("\n", 0, head)
    else:
        head, states = 0, []
    state = start
    for line in text[head:].split("\n"):
        states.append(state)
        if state != STATE_ROOT or "{-#" in line:
            state = end_state(line, state)
    return states, state


class MlirHighlighter(QtGui.QSyntaxHighlighter):
    """Highlights blocks of `document` on request only (see module doc)."""

    def __init__(self, document: QtGui.QTextDocument, style: str = "default"):
        super().__init__(document)
        # Cut QSyntaxHighlighter's own contentsChange -> reformat-all link.
        QtCore.QObject.disconnect(document, None, self, None)
        document.documentLayout()  # without a layout, no contentsChange
        document.contentsChange.connect(self._on_contents_change)
        self._doc = document
        self._done: set[int] = set()
        self._states: list[int] | None = None
        self._tail = STATE_ROOT  # the state after the last line (where appended lines start)
        self._appending = False
        self._states_dirty = True
        self._block_count = document.blockCount()
        self._requested = -1  # the block number we asked Qt to highlight
        self.blocks_highlighted = 0  # total lexed blocks, for tests/benchmarks
        self._formats: dict = {}
        self._style = get_style_by_name(style)
        self._elided_format = QtGui.QTextCharFormat()
        self._elided_format.setForeground(QtGui.QColor("#8a8a8a"))
        self._elided_format.setFontItalic(True)
        self._elided_format.setBackground(QtGui.QColor("#eeeeee"))

    # -- public API -------------------------------------------------------

    def reset(self, text: str | None = None) -> None:
        """Forget what was highlighted: the document's text was replaced
        (by `text`, if given, which saves reading it back)."""
        self._done.clear()
        if text is None:
            self._states_dirty = True
        else:
            self._states, self._tail = _line_states(text)
            self._states_dirty = False
        self._block_count = self._doc.blockCount()

    @contextmanager
    def appending(self, text: str):
        """`text` is appended to the document as new lines after the last one (a text shown a slice at a
        time): lines already highlighted stay so, and the new lines' states follow from the last one's."""
        before = self._block_count
        self._appending = True
        try:
            yield
        finally:
            self._appending = False
            self._block_count = self._doc.blockCount()
        if self._states_dirty:
            return  # rescanned whole at the next use
        more, self._tail = _line_states(text, self._tail)
        if more is None and self._states is None:
            return
        if self._states is None:
            self._states = [STATE_ROOT] * before
        self._states.extend(more if more is not None else [STATE_ROOT] * (text.count("\n") + 1))

    def is_highlighted(self, block_number: int) -> bool:
        return block_number in self._done

    def ensure_highlighted(self, first: int, last: int) -> int:
        """Highlight blocks first..last (0-based, inclusive) not yet done.

        Returns how many blocks were lexed.
        """
        if self._states_dirty:
            self._states, self._tail = _line_states(self._doc.toPlainText())
            self._states_dirty = False
        count = 0
        block = self._doc.findBlockByNumber(max(0, first))
        while block.isValid() and block.blockNumber() <= last:
            n = block.blockNumber()
            if n not in self._done:
                self._requested = n
                try:
                    self.rehighlightBlock(block)
                finally:
                    self._requested = -1
                self._done.add(n)
                count += 1
            block = block.next()
        return count

    # -- QSyntaxHighlighter -----------------------------------------------

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        n = self._requested
        if n < 0:
            return  # Qt's own (delayed) full rehighlight: ignore
        states = self._states
        state = states[n] if states is not None and n < len(states) else STATE_ROOT
        line = text[:MAX_LINE_CHARS]
        spans, _ = lex_line(line, state)
        self.blocks_highlighted += 1
        fmt_for = self._format_for
        set_format = self.setFormat
        if has_wide(line):  # Qt counts an emoji as two columns, the lexer as one
            units = utf16_offsets(line)

            def set_format(start, length, fmt, _set=self.setFormat):
                _set(units[start], units[start + length] - units[start], fmt)
        for start, length, ttype in spans:
            fmt = fmt_for(ttype)
            if fmt is not None:
                set_format(start, length, fmt)
        if "…(" in line:
            for m in _ELIDED.finditer(line):
                set_format(m.start(), m.end() - m.start(), self._elided_format)

    # -- internals --------------------------------------------------------

    def _format_for(self, ttype) -> QtGui.QTextCharFormat | None:
        """The style's colours for `ttype`, or None. Its bold and italic are left out: every run in
        another font costs a font lookup on every paint (a third of a page's paint: keywords are bold
        and comments italic in the default style), and colour alone tells the tokens apart."""
        try:
            return self._formats[ttype]
        except KeyError:
            pass
        style = self._style.style_for_token(ttype)
        fmt = None
        if style["color"] or style["bgcolor"]:
            fmt = QtGui.QTextCharFormat()
            if style["color"]:
                fmt.setForeground(QtGui.QColor("#" + style["color"]))
            if style["bgcolor"]:
                fmt.setBackground(QtGui.QColor("#" + style["bgcolor"]))
        self._formats[ttype] = fmt
        return fmt

    @QtCore.Slot(int, int, int)
    def _on_contents_change(self, pos: int, removed: int, added: int) -> None:
        if self._requested >= 0 or self._appending or removed == added == 0:
            return  # our own format change, lines appended (see appending), or nothing
        doc = self._doc
        first_block = doc.findBlock(pos)
        last_block = doc.findBlock(pos + added)
        if not last_block.isValid():
            last_block = doc.lastBlock()
        first, last = first_block.blockNumber(), last_block.blockNumber()
        count = doc.blockCount()
        if count != self._block_count:
            # Lines were added or removed: numbers after `first` shift.
            self._done = {n for n in self._done if n < first}
            self._block_count = count
            if self._states is not None:
                self._states_dirty = True
        else:
            self._done.difference_update(range(first, last + 1))
        if not self._states_dirty and last - first > 64:
            self._states_dirty = True  # a big change: rescan on next use
        if not self._states_dirty:
            block = first_block
            while block.isValid() and block.blockNumber() <= last:
                text = block.text()
                if "{-#" in text or "#-}" in text:
                    self._states_dirty = True
                    break
                block = block.next()
