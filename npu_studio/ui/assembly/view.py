"""AssemblyView: a read-only listing with a gutter of binary offsets and sizes, and marks.

The gutter shows, beside each instruction, where its encoding sits in the binary (hex
offset, size in bytes) and a stripe for the lines of the marked dispatch. The marked
dispatch's lines get a light background, the marked task's a stronger one; both are
painted for the lines on screen only, so marking a dispatch of 50,000 lines costs nothing.
A click (or Enter) on a line says which line it was (`sig_line_activated`); moving the
cursor from code (`go_to_line`) does not.
"""

from __future__ import annotations

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
        self.highlighter = AssemblyHighlighter(self.document())
        self.gutter = _Gutter(self)
        self._offset_digits = 4
        self.updateRequest.connect(self._on_update_request)
        self._fit_gutter()

    # -- content --------------------------------------------------------------------
    def show_model(self, model: AssemblyModel | None, note: str = "") -> None:
        """The listing of `model` (None: `note` in its place), unmarked."""
        self.model = model
        self.highlighter.reset()
        self.setPlainText(model.text if model is not None and model.emitted is not None
                          else (model.reason if model is not None else note))
        last = max((t.offset for t in model.by_line.values()), default=0) if model is not None else 0
        self._offset_digits = max(4, len(f"{last:x}"))
        self._fit_gutter()
        self.mark(None, None)
        self._highlight_visible()

    def text(self) -> str:
        return self.toPlainText()

    def current_line(self) -> int:
        return self.textCursor().blockNumber() + 1

    # -- marks and scrolling ------------------------------------------------------------
    def mark(self, dispatch: int | None, task: int | None) -> None:
        """Mark the lines of `dispatch` and of `task` (None: none)."""
        m = self.model
        self.marked_dispatch = dispatch
        self.marked_lines = frozenset(m.lines_of_dispatch(dispatch)) if m is not None and dispatch is not None \
            else frozenset()
        self.task_lines = frozenset(m.lines_of_task(task)) if m is not None and task is not None else frozenset()
        self._apply_filter()
        self.viewport().update()
        self.gutter.update()

    def set_only_marked(self, only: bool) -> None:
        """Hide every line but the marked dispatch's (all lines when no dispatch is marked)."""
        self.only_marked = only
        self._apply_filter()

    def go_to_line(self, line: int) -> None:
        """Put the cursor on 1-based `line` and scroll it to the middle, without activating it."""
        block = self.document().findBlockByNumber(line - 1)
        if not block.isValid():
            return
        cursor = QtGui.QTextCursor(block)
        self.setTextCursor(cursor)
        self.centerCursor()
        self._highlight_visible()

    def visible_line_range(self) -> tuple[int, int]:
        first = self.firstVisibleBlock()
        block, bottom, last = first, self.viewport().height(), first.blockNumber()
        while block.isValid():
            if block.isVisible():
                if self.blockBoundingGeometry(block).translated(self.contentOffset()).top() > bottom:
                    break
                last = block.blockNumber()
            block = block.next()
        return first.blockNumber() + 1, last + 1

    def _apply_filter(self) -> None:
        show_all = not (self.only_marked and self.marked_lines)
        doc, changed = self.document(), False
        block = doc.firstBlock()
        while block.isValid():
            visible = show_all or (block.blockNumber() + 1) in self.marked_lines
            if block.isVisible() != visible:
                block.setVisible(visible)
                changed = True
            block = block.next()
        if changed:
            doc.markContentsDirty(0, doc.characterCount())
            self.viewport().update()

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
        first, last = self.visible_line_range()
        self.highlighter.ensure_highlighted(first - 1, last + 5)

    def _visible_blocks(self):
        """(1-based line, top, height) of each block on screen."""
        block = self.firstVisibleBlock()
        offset, bottom = self.contentOffset(), self.viewport().height()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > bottom:
                break
            if block.isVisible():
                yield block.blockNumber() + 1, int(geometry.top()), int(geometry.height())
            block = block.next()

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        if self.marked_lines or self.task_lines:
            painter = QtGui.QPainter(self.viewport())
            width = self.viewport().width()
            for line, top, height in self._visible_blocks():
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
        for line, top, _height in self._visible_blocks():
            if line in self.marked_lines:
                painter.fillRect(0, top, 3, _height, STRIPE)
            tag = m.tag_at(line) if m is not None else None
            if tag is None or not tag.size:
                continue
            painter.setPen(GUTTER_TEXT)
            painter.drawText(4, top, text_width, height, QtCore.Qt.AlignmentFlag.AlignRight,
                             f"0x{tag.offset:0{self._offset_digits}x} {tag.size:>4}")
        painter.end()
