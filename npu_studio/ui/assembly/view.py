"""AssemblyView: a read-only listing with a gutter of binary offsets and sizes, and marks.

The gutter shows, beside each instruction, where its encoding sits in the binary (hex
offset, size in bytes) and a stripe for the lines of the marked dispatch. The marked
dispatch's lines get a light background, the marked task's a stronger one; both are
painted for the lines on screen only, so marking a dispatch of 50,000 lines costs nothing.
"Only the marked dispatch" shows that dispatch's lines alone; `current_line` and the marks
still speak of the whole listing's line numbers.
A click (or Enter) on a line says which line it was (`sig_line_activated`); moving the
cursor from code (`go_to_line`) does not.
"""

from __future__ import annotations

import bisect

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.npu.report.assembly_model import AssemblyModel
from .highlighter import AssemblyHighlighter

DISPATCH_BACKGROUND = QtGui.QColor(255, 236, 179, 110)  # the IR view's dispatch tint, lighter
TASK_BACKGROUND = QtGui.QColor(255, 193, 7, 150)
STRIPE = QtGui.QColor("#f0a500")
GUTTER_TEXT = QtGui.QColor("#8a8a8a")
GUTTER_BACKGROUND = QtGui.QColor("#f6f6f6")


class _Gutter(QtWidgets.QWidget):
    def __init__(self, view: "AssemblyView"):
        super().__init__(view)
        self.view = view

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802
        return QtCore.QSize(self.view.gutter_width(), 0)

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        self.view.paint_gutter(self, event)


class AssemblyView(QtWidgets.QPlainTextEdit):
    sig_line_activated = QtCore.Signal(int)  # 1-based line the user clicked or pressed Enter on

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
                                     | QtCore.Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setAccessibleName("NPU assembly")
        self.model: AssemblyModel | None = None
        self.marked_dispatch: int | None = None
        self.marked_lines: frozenset[int] = frozenset()  # the marked dispatch's lines
        self.task_lines: frozenset[int] = frozenset()  # the marked task's lines
        self.only_marked = False
        self._all = ""  # the whole listing (or the note in its place)
        self._shown: list[int] | None = None  # the listing's lines on show, one per block (None: all)
        self.highlighter = AssemblyHighlighter(self.document())
        self.gutter = _Gutter(self)
        self._offset_digits = 4
        self.updateRequest.connect(self._on_update_request)
        self._fit_gutter()

    # -- content --------------------------------------------------------------------
    def show_model(self, model: AssemblyModel | None, note: str = "") -> None:
        """The listing of `model` (None: `note` in its place), unmarked."""
        self.model = model
        self._all = (model.text if model is not None and model.emitted is not None
                     else (model.reason if model is not None else note))
        last = max((t.offset for t in model.by_line.values()), default=0) if model is not None else 0
        self._offset_digits = max(4, len(f"{last:x}"))
        self._fit_gutter()
        self.marked_dispatch, self.marked_lines, self.task_lines = None, frozenset(), frozenset()
        self._set_shown(None)

    def text(self) -> str:
        """The text on show (the whole listing, or the marked dispatch's lines when filtered)."""
        return self.toPlainText()

    def current_line(self) -> int:
        """The listing's 1-based line the cursor is on (filtered or not)."""
        return self.line_of_block(self.textCursor().blockNumber())

    def line_of_block(self, block: int) -> int:
        return self._shown[block] if self._shown is not None and block < len(self._shown) else block + 1

    # -- marks and scrolling ------------------------------------------------------------
    def mark(self, dispatch: int | None, task: int | None) -> None:
        """Mark the lines of `dispatch` and of `task` (None: none)."""
        m = self.model
        changed = dispatch != self.marked_dispatch
        self.marked_dispatch = dispatch
        self.marked_lines = frozenset(m.lines_of_dispatch(dispatch)) if m is not None and dispatch is not None \
            else frozenset()
        self.task_lines = frozenset(m.lines_of_task(task)) if m is not None and task is not None else frozenset()
        if changed and self.only_marked:
            self._filter()
        self.viewport().update()
        self.gutter.update()

    def set_only_marked(self, only: bool) -> None:
        """Show only the marked dispatch's lines (all lines when no dispatch is marked)."""
        if only != self.only_marked:
            self.only_marked = only
            line = self.current_line()
            self._filter()
            self.go_to_line(line)

    def go_to_line(self, line: int) -> None:
        """Put the cursor on 1-based `line` and scroll it to the middle, without activating it
        (a line the filter hides: the nearest shown after it)."""
        if self._shown is None:
            number = line - 1
        else:
            number = min(bisect.bisect_left(self._shown, line), max(len(self._shown) - 1, 0))
        block = self.document().findBlockByNumber(number)
        if not block.isValid():
            return
        self.setTextCursor(QtGui.QTextCursor(block))
        self.centerCursor()
        self._highlight_visible()

    def visible_line_range(self) -> tuple[int, int]:
        """The listing's first and last lines on screen."""
        numbers = [self.line_of_block(n) for n, _top, _h in self._visible_blocks()]
        return (numbers[0], numbers[-1]) if numbers else (1, 1)

    def _filter(self) -> None:
        if self.only_marked and self.marked_lines:
            self._set_shown(sorted(self.marked_lines))
        elif self._shown is not None:
            self._set_shown(None)

    def _set_shown(self, lines: list[int] | None) -> None:
        """Show the listing's `lines` (None: all of it)."""
        self._shown = lines
        if lines is None:
            self.setPlainText(self._all)
        else:
            every = self._all.split("\n")
            self.setPlainText("\n".join(every[n - 1] for n in lines))
        self.highlighter.reset()  # after: setPlainText repaints its first, still empty, block on the way
        self._highlight_visible()

    # -- input ----------------------------------------------------------------------
    def mouseReleaseEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802
        super().mouseReleaseEvent(event)
        if event.button() == QtCore.Qt.MouseButton.LeftButton and not self.textCursor().hasSelection():
            self.sig_line_activated.emit(self.current_line())

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:  # noqa: N802
        if event.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter):
            self.sig_line_activated.emit(self.current_line())
            return
        super().keyPressEvent(event)

    # -- painting -------------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = 2 + self._offset_digits + 1 + 5  # "0x" offset, a space, the size
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits

    def _fit_gutter(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)
        self.gutter.update()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        rect = self.contentsRect()
        self.gutter.setGeometry(QtCore.QRect(rect.left(), rect.top(), self.gutter_width(), rect.height()))

    def _on_update_request(self, rect: QtCore.QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())
        self._highlight_visible()

    def _highlight_visible(self) -> None:
        first = self.firstVisibleBlock().blockNumber()
        rows = self.viewport().height() // max(self.fontMetrics().height(), 1)
        self.highlighter.ensure_highlighted(first, first + rows + 5)

    def _visible_blocks(self):
        """(block number, top, height) of each block on screen."""
        block = self.firstVisibleBlock()
        offset, bottom = self.contentOffset(), self.viewport().height()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > bottom:
                break
            yield block.blockNumber(), int(geometry.top()), int(geometry.height())
            block = block.next()

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        if self.marked_lines or self.task_lines:
            painter = QtGui.QPainter(self.viewport())
            width = self.viewport().width()
            for block, top, height in self._visible_blocks():
                line = self.line_of_block(block)
                if line in self.task_lines:
                    painter.fillRect(0, top, width, height, TASK_BACKGROUND)
                elif line in self.marked_lines:
                    painter.fillRect(0, top, width, height, DISPATCH_BACKGROUND)
            painter.end()
        super().paintEvent(event)

    def paint_gutter(self, gutter: QtWidgets.QWidget, event: QtGui.QPaintEvent) -> None:
        painter = QtGui.QPainter(gutter)
        painter.fillRect(event.rect(), GUTTER_BACKGROUND)
        painter.setFont(self.font())
        m, height = self.model, self.fontMetrics().height()
        text_width = gutter.width() - 8
        for block, top, row_height in self._visible_blocks():
            line = self.line_of_block(block)
            if line in self.marked_lines:
                painter.fillRect(0, top, 3, row_height, STRIPE)
            tag = m.tag_at(line) if m is not None else None
            if tag is None or not tag.size:
                continue
            painter.setPen(GUTTER_TEXT)
            painter.drawText(4, top, text_width, height, QtCore.Qt.AlignmentFlag.AlignRight,
                             f"0x{tag.offset:0{self._offset_digits}x} {tag.size:>4}")
        painter.end()
