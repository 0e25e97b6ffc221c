"""Folding in an IrView: hidden text blocks under a header line, toggled from the gutter.

A fold hides lines start+1..end (core FoldRange) by making their blocks invisible; the plain-text
layout then gives them no height, and the view's painting skips them. Runs of `#loc` aliases and the
resource section fold as soon as a text is shown (`default_folds`, a quick scan), the
regions become foldable when the navigation index arrives. Going to a hidden line unfolds it.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui

from ...core.ir.nav_index import FoldRange
from .ir_view import IrView

_MARK = 9  # size of the gutter's fold marker, pixels


class Folding(QtCore.QObject):
    sig_changed = QtCore.Signal()  # folded or unfolded

    def __init__(self, view: IrView):
        super().__init__(view)
        self.view = view
        self._ranges: dict[int, FoldRange] = {}  # by start line
        self._folded: set[int] = set()  # start lines of the folded ranges
        self._hidden: set[int] = set()  # 1-based lines hidden now
        self._offered: set[int] = set()  # start lines of the default folds the text on show has had
        view.reveal_line = self.reveal
        view.gutter_painters.append(self._paint_marker)
        view.gutter().installEventFilter(self)

    # -- state ----------------------------------------------------------------------------------

    def set_ranges(self, ranges: list[FoldRange] | dict[int, FoldRange], fold_defaults: bool) -> None:
        """The foldable ranges of the text on show (a list, or a dict by first line: an index's
        `folds_by_start`). `fold_defaults`: a new text, its default folds close; otherwise (the same
        text re-indexed) folds that still exist stay as they are."""
        self._ranges = dict(ranges) if isinstance(ranges, dict) else {r.start_line: r for r in ranges}
        if fold_defaults:
            self._hidden = set()  # a new document: every block is visible
            self._folded = {r.start_line for r in self._ranges.values() if r.folded_by_default}
            self._offered = set(self._folded)
        else:
            self._folded = {start for start in self._folded if start in self._ranges}  # few: not a set of all
        self._apply()

    def ranges(self) -> list[FoldRange]:
        return sorted(self._ranges.values(), key=lambda r: r.start_line)

    def is_folded(self, line: int) -> bool:
        return line in self._folded

    def is_hidden(self, line: int) -> bool:
        return line in self._hidden

    def fold(self, line: int) -> None:
        if line in self._ranges and line not in self._folded:
            self._folded.add(line)
            self._apply()

    def unfold(self, line: int) -> None:
        if line in self._folded:
            self._folded.discard(line)
            self._apply()

    def toggle(self, line: int) -> None:
        (self.unfold if line in self._folded else self.fold)(line)

    def reveal(self, line: int) -> None:
        """Unfold every folded range that hides `line`."""
        around = {s for s in self._folded if s < line <= self._ranges[s].end_line}
        if around:
            self._folded -= around
            self._apply()

    # -- applying -------------------------------------------------------------------------------

    def _apply(self) -> None:
        hidden: set[int] = set()
        for start in self._folded:
            if start not in hidden:
                hidden.update(range(start + 1, self._ranges[start].end_line + 1))
        changed = hidden ^ self._hidden
        self._hidden = hidden
        if not changed:
            self.sig_changed.emit()
            return
        self._show_as_hidden(sorted(changed))
        self.view.viewport().update()
        self.view.gutter().update()
        self.view.ensureCursorVisible()
        self.sig_changed.emit()

    def add_ranges(self, ranges: list[FoldRange], first: int, last: int) -> None:
        """The default folds of lines first..last, which just came in (a big text arrives a slice at a
        time: ui/ir/streaming.py); a range that goes on from the lines before replaces the one it continues."""
        for r in ranges:
            if r.folded_by_default and r.start_line not in self._offered:  # unfolded by the user: stays so
                self._folded.add(r.start_line)
                self._offered.add(r.start_line)
            self._ranges[r.start_line] = r
            if r.start_line in self._folded:
                self._hidden.update(range(max(first, r.start_line + 1), r.end_line + 1))
        self._show_as_hidden([line for line in range(first, last + 1) if line in self._hidden])
        self.view.gutter().update()

    def _show_as_hidden(self, lines: list[int]) -> None:
        """Blocks of `lines` (1-based, ascending; those not in the document yet skipped) shown or hidden as
        `_hidden` says, then laid out again."""
        doc = self.view.document()
        for line in lines:
            block = doc.findBlockByNumber(line - 1)
            if block.isValid():
                block.setVisible(line not in self._hidden)
        first = doc.findBlockByNumber(lines[0] - 1) if lines else QtGui.QTextBlock()
        if first.isValid():
            last = doc.findBlockByNumber(lines[-1] - 1)
            end = last if last.isValid() else doc.lastBlock()
            doc.markContentsDirty(first.position(), end.position() + end.length() - first.position())

    # -- gutter ---------------------------------------------------------------------------------

    def _paint_marker(self, painter: QtGui.QPainter, block: int, top: float, height: float) -> None:
        line = block + 1
        if line not in self._ranges:
            return
        x = self.view.gutter().width() - _MARK - 2
        y = top + (height - _MARK) / 2
        folded = line in self._folded
        path = QtGui.QPainterPath()
        if folded:  # a triangle pointing right
            path.moveTo(x + 2, y)
            path.lineTo(x + _MARK - 1, y + _MARK / 2)
            path.lineTo(x + 2, y + _MARK)
        else:  # pointing down
            path.moveTo(x, y + 2)
            path.lineTo(x + _MARK, y + 2)
            path.lineTo(x + _MARK / 2, y + _MARK - 1)
        path.closeSubpath()
        painter.fillPath(path, QtGui.QColor("#5a5a5a" if folded else "#a0a0a0"))

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QtCore.QEvent.Type.MouseButtonPress:
            cursor = self.view.cursorForPosition(QtCore.QPoint(0, int(event.position().y())))
            line = cursor.blockNumber() + 1
            if line in self._ranges:
                self.toggle(line)
                return True
        return False
