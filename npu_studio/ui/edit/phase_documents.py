"""One text document per edited phase, so that its undo history survives switching phases.

The IR view shows a phase's text read-only (elided) in its own display document. Once a phase is
edited, its text lives in a document of its own, with its own undo stack, cursor and scroll
position; switching to another phase and back shows that document again. The history is kept
while the document's text is still what the phase shows (its draft, or its snapshot after a
resume that compiled exactly that text); any other text (a recompile, a revert, another model)
starts a new history, as the undo of a text that is no longer there would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6 import QtGui

from ..ir.ir_view import IrView


@dataclass
class _Kept:
    document: QtGui.QTextDocument
    cursor: int = 0  # position
    scroll: int = 0  # vertical scroll bar value


class PhaseDocuments:
    def __init__(self, view: IrView):
        self.view = view
        self._kept: dict[str, _Kept] = {}
        self._shown: str | None = None

    def show(self, phase: str, text: str) -> QtGui.QTextDocument:
        """Show `phase`'s own document with `text`: the kept one (history, cursor, scroll) if its
        text is `text`, else a new one that starts where the view's display was."""
        self.leave()
        kept = self._kept.get(phase)
        if kept is None or kept.document.toPlainText() != text:
            view = self.view
            scroll, line = view.verticalScrollBar().value(), view.textCursor().blockNumber()
            kept = _Kept(IrView.new_document(text), scroll=scroll)
            block = kept.document.findBlockByNumber(line)
            kept.cursor = block.position() if block.isValid() else 0
            self._kept[phase] = kept
        self.view.use_document(kept.document)
        cursor = QtGui.QTextCursor(kept.document)
        cursor.setPosition(min(kept.cursor, max(kept.document.characterCount() - 1, 0)))
        self.view.setTextCursor(cursor)
        self.view.verticalScrollBar().setValue(kept.scroll)
        self._shown = phase
        return kept.document

    def leave(self) -> None:
        """Remember where the shown phase's document was (the view moves on to another text)."""
        kept = self._kept.get(self._shown) if self._shown is not None else None
        if kept is not None and self.view.document() is kept.document:
            kept.cursor = self.view.textCursor().position()
            kept.scroll = self.view.verticalScrollBar().value()
        self._shown = None

    def document(self, phase: str) -> QtGui.QTextDocument | None:
        kept = self._kept.get(phase)
        return kept.document if kept is not None else None

    def clear(self) -> None:
        """Another model: every history goes (the view shows its display document again)."""
        self.view.use_document(None)
        for kept in self._kept.values():
            kept.document.deleteLater()
        self._kept, self._shown = {}, None
