"""Light colouring of an NPU assembly listing, done for the lines on screen only.

Any backend's text is coloured by the same few patterns (the generic NPU's tag column,
directives, mnemonics, `key=` names, numbers, strings, `;` comments), so a vendor's
listing reads as well as ours. As in ui/ir/highlighter.py, Qt's automatic highlight of the
whole document is cut: a program of 100,000 instructions is not lexed before it is drawn.
"""

from __future__ import annotations

import re

from PySide6 import QtCore, QtGui

MAX_LINE_CHARS = 2000
_TOKEN = re.compile(r"""
    (?P<comment>;.*$)
  | (?P<string>"[^"]*")
  | (?P<tag>\bd\d+(?:\.t\d+)?\b|\bt\d+\b)
  | (?P<directive>(?<![\w.])\.[A-Za-z_][\w.]*)
  | (?P<key>\b[A-Za-z_][\w]*(?==))
  | (?P<number>\b0x[0-9a-fA-F]+\b|(?<![\w.])-?\d+\b)
  | (?P<word>\b[A-Za-z_][\w.]*\b)
""", re.VERBOSE)
COLOURS = {"comment": "#7a7a7a", "string": "#2e7d32", "tag": "#6a737d", "directive": "#8e44ad",
           "key": "#6a737d", "number": "#005f87", "mnemonic": "#0b3d91"}


def _format(kind: str) -> QtGui.QTextCharFormat:
    fmt = QtGui.QTextCharFormat()
    fmt.setForeground(QtGui.QColor(COLOURS[kind]))
    if kind == "mnemonic":
        fmt.setFontWeight(QtGui.QFont.Weight.Bold)
    if kind == "comment":
        fmt.setFontItalic(True)
    return fmt


def spans(line: str) -> list[tuple[int, int, str]]:
    """(start, length, kind) of what is coloured in `line`; the first plain word is its mnemonic."""
    out, seen_mnemonic = [], False
    for m in _TOKEN.finditer(line[:MAX_LINE_CHARS]):
        kind = m.lastgroup
        if kind == "word":
            if seen_mnemonic:
                continue
            kind, seen_mnemonic = "mnemonic", True
        elif kind == "directive":
            seen_mnemonic = True
        out.append((m.start(), m.end() - m.start(), kind))
    return out


class AssemblyHighlighter(QtGui.QSyntaxHighlighter):
    """Colours blocks of `document` when asked (`ensure_highlighted`), never all at once."""

    def __init__(self, document: QtGui.QTextDocument):
        super().__init__(document)
        QtCore.QObject.disconnect(document, None, self, None)  # no automatic rehighlight of everything
        self._doc = document
        self._done: set[int] = set()
        self._asked = False
        self._formats = {kind: _format(kind) for kind in COLOURS}

    def reset(self) -> None:
        """The document's text was replaced: nothing of it is coloured yet."""
        self._done.clear()

    def ensure_highlighted(self, first: int, last: int) -> None:
        block = self._doc.findBlockByNumber(max(0, first))
        while block.isValid() and block.blockNumber() <= last:
            if block.blockNumber() not in self._done:
                self._done.add(block.blockNumber())
                self._asked = True
                try:
                    self.rehighlightBlock(block)
                finally:
                    self._asked = False
            block = block.next()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        if not self._asked:
            return  # Qt's own delayed pass over the document: skipped
        for start, length, kind in spans(text):
            self.setFormat(start, length, self._formats[kind])
