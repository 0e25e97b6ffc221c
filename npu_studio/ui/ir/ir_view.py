"""IrView: a read-only (optionally editable) MLIR text view.

Line-number gutter, current-line highlight, lazy syntax highlighting of the
visible lines, elision of huge constants for display, and tinted line ranges
("regions", e.g. one per dispatch) that can be marked and clicked.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.core.ir.elision import ELIDE_OVER, Elision, display_to_real_col, elide_text, real_to_display_col
from npu_studio.ui.ir.highlighter import MlirHighlighter
from npu_studio.ui.ir import paging
from npu_studio.ui.ir.lazy_highlight import HighlightScheduler
from npu_studio.ui.ir.streaming import TextStream
from npu_studio.ui.ir.utf16 import from_utf16, to_utf16

__all__ = ["ELIDE_OVER", "Elision", "IrView", "Region", "display_to_real_col", "elide_text", "real_to_display_col"]


@dataclass(frozen=True)
class Region:
    """Lines start_line..end_line (1-based, inclusive) tinted with `color`."""

    key: object
    start_line: int
    end_line: int
    color: QtGui.QColor | None = None


class _Gutter(QtWidgets.QWidget):
    """Line numbers, plus a colour bar for the regions."""

    def __init__(self, view: IrView):
        super().__init__(view)
        self._view = view
        self.setAccessibleName("Line numbers")

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802
        return QtCore.QSize(self._view.gutter_width(), 0)

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        self._view._paint_gutter(self, event)


class IrView(QtWidgets.QPlainTextEdit):
    """Shows one MLIR snapshot; see the module docstring."""

    sig_region_clicked = QtCore.Signal(object)  # region key
    sig_elided_changed = QtCore.Signal(bool)  # whether constants are elided
    sig_editable_changed = QtCore.Signal(bool)  # editable
    sig_text_shown = QtCore.Signal()  # another text or document is on show (set_text, use_document)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("IR view")
        self.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.FixedFont))
        self.setReadOnly(True)
        self.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
            | QtCore.Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.highlighter = MlirHighlighter(self.document())
        self._base = (self.document(), self.highlighter)  # the display document; phases may lend theirs
        # Owned by a holder, not the view's text control: setDocument deletes a document the control owns.
        self._documents = QtCore.QObject(self)
        self.document().setParent(self._documents)
        self._change_listeners: list = []  # contentsChange slots that follow the document on show
        self._real_text: str | None = None  # set while elided
        self._plain: str | None = None  # the text set_text showed, while nothing edited it
        self._elisions: dict[int, list[Elision]] = {}
        self._regions: list[Region] = []
        self._region_starts: list[int] = []
        self._regions_by_key: dict[object, Region] = {}
        self._marked: object | None = None
        self._press_pos: QtCore.QPoint | None = None
        self._marks: list[QtWidgets.QTextEdit.ExtraSelection] = []  # e.g. error underlines
        self.reveal_line = None  # reveal_line(line): show a folded line before going there (set by folding)
        self.gutter_painters: list = []  # painter(QPainter, block number, top, height): fold markers
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._on_update_request)
        self.cursorPositionChanged.connect(self._highlight_current_line)
        self.verticalScrollBar().valueChanged.connect(self._highlight_visible)
        self.document().contentsChange.connect(self._on_contents_change)
        self._rehighlight_timer = QtCore.QTimer(self)
        self._rehighlight_timer.setSingleShot(True)
        self._rehighlight_timer.setInterval(0)
        self._rehighlight_timer.timeout.connect(self._highlight_visible)
        self.highlighting = HighlightScheduler(self)  # visible lines now, the pages around them once painted
        self.stream = TextStream(self)  # a big text arrives a slice at a time (streaming.py)
        self._update_gutter_width()
        self._highlight_current_line()

    # -- text -------------------------------------------------------------

    def use_document(self, document: QtGui.QTextDocument | None) -> None:
        """Show `document` (a phase's text with its own undo history, see PhaseDocuments), or with
        None the view's own display document again. The document keeps its highlighter."""
        document = document or self._base[0]
        if document is self.document():
            return
        if document is not self._base[0]:
            self.stream.stop()  # the display text is set again (set_text) before it shows again
        for slot in (self._on_contents_change, *self._change_listeners):
            self.document().contentsChange.disconnect(slot)
        highlighter = self._base[1] if document is self._base[0] else document.findChild(MlirHighlighter)
        # The widget's font reaches a document only on a font change, and the view's font never changes:
        # a phase's document would keep the proportional default (other metrics, clicks off by lines).
        document.setDefaultFont(self.font())
        self.setDocument(document)
        self.highlighter = highlighter
        for slot in (self._on_contents_change, *self._change_listeners):
            document.contentsChange.connect(slot)
        self._real_text, self._elisions, self._plain = None, {}, None
        self.highlighting.forget()
        self._update_gutter_width()
        self.highlighting.visible(defer=False)
        self.sig_text_shown.emit()

    def display_document(self) -> QtGui.QTextDocument:
        """The view's own document, which set_text fills (a phase's lent document is another)."""
        return self._base[0]

    def display_highlighter(self) -> MlirHighlighter:
        return self._base[1]

    def connect_contents_change(self, slot) -> None:
        """`slot(pos, removed, added)` on every change of the document on show, whichever it is."""
        self._change_listeners.append(slot)
        self.document().contentsChange.connect(slot)

    @staticmethod
    def new_document(text: str) -> QtGui.QTextDocument:
        """A document for `use_document`: plain-text layout, `text`, an MLIR highlighter, no undo yet."""
        document = QtGui.QTextDocument()
        document.setDocumentLayout(QtWidgets.QPlainTextDocumentLayout(document))
        # The highlighter (a child of the document: it goes with it) before the text: on a document that
        # has text, QSyntaxHighlighter schedules a full rehighlight for the next turn of the event loop,
        # which would wipe the colours of every line already highlighted (edit mode lost its colours).
        MlirHighlighter(document)
        document.setPlainText(text)
        document.clearUndoRedoStacks()
        document.setModified(False)
        return document

    def set_text(self, text: str, elide: bool = True, keep_place: bool = False) -> None:
        """Show `text`; with `elide`, huge constants are shortened for display
        (only while read-only; line numbers stay those of `text`). With `keep_place` (the same
        file rebuilt), the scroll position and the cursor's line and column stay."""
        place = (self.verticalScrollBar().value(), self.horizontalScrollBar().value(),
                 *self.file_position(self.textCursor())) if keep_place else None
        self.use_document(None)
        was_elided = self._real_text is not None
        # A big text: its first lines now, the rest a slice at a time from the event loop (streaming.py).
        display, elisions = self.stream.first_slice(text, elide and self.isReadOnly())
        self._real_text = text if elisions else None
        self._elisions = elisions
        # Size the gutter first: resizing the viewport of a full document
        # costs a relayout.
        self._update_gutter_width(lines=self.stream.total_lines)
        self.setPlainText(display)
        self.document().setModified(False)
        self.highlighter.reset(display)
        self.highlighting.forget()
        self._plain = text
        self.highlighting.visible(defer=False)
        self.stream.start()
        self.sig_text_shown.emit()
        if was_elided != self.is_elided():
            self.sig_elided_changed.emit(self.is_elided())
        if place is not None:
            def restore() -> None:
                self.goto(place[2], place[3] + 1, center=False)
                self.verticalScrollBar().setValue(place[0])
                self.horizontalScrollBar().setValue(place[1])
            # The scroll bar counts lines on screen, never more than the lines above them.
            self.stream.when_loaded(max(place[2], place[0] + self.viewport().height()), restore)

    def add_elisions(self, elisions: dict[int, list[Elision]]) -> None:
        """Elisions of lines that came in after set_text (streaming.py)."""
        self._elisions.update(elisions)
        if self._real_text is None:
            self._real_text = self._plain
            self.sig_elided_changed.emit(True)

    def line_count(self) -> int:
        """Lines of the text on show, with those still coming in."""
        return self.stream.total_lines if self.stream.loading else self.blockCount()

    def text(self) -> str:
        """The real text: unelided, including the user's edits."""
        if self._real_text is not None:
            return self._real_text
        return self._plain if self._plain is not None and self.isReadOnly() else self.toPlainText()

    def is_elided(self) -> bool:
        return self._real_text is not None

    def is_editable(self) -> bool:
        return not self.isReadOnly()

    def set_editable(self, editable: bool) -> None:
        """Allow editing. Editing works on the full text, so elision is
        turned off first (sig_elided_changed(False))."""
        if editable == self.is_editable():
            return
        if editable and self._real_text is not None:
            line = self.verticalScrollBar().value()
            cursor_line = self.textCursor().blockNumber() + 1
            self.set_text(self._real_text, elide=False)
            self.stream.finish()
            self.verticalScrollBar().setValue(line)
            self.goto(cursor_line, 1, center=False)
        if editable:
            self.stream.finish()  # edits need the whole text
        self.setReadOnly(not editable)
        self._plain = None  # edits may follow: text() reads the document again
        flags = QtCore.Qt.TextInteractionFlag
        self.setTextInteractionFlags(
            flags.TextEditorInteraction
            if editable
            else flags.TextSelectableByMouse | flags.TextSelectableByKeyboard
        )
        self.sig_editable_changed.emit(editable)

    # -- navigation -------------------------------------------------------

    def goto(self, line: int, col: int = 1, center: bool = True) -> None:
        """Put the cursor at 1-based `line`, `col` (a column of the file,
        mapped past elisions) and center it (once the line is in: streaming.py)."""
        self.stream.when_loaded(line, lambda: self._goto(line, col, center))

    def _goto(self, line: int, col: int, center: bool) -> None:
        block = self.document().findBlockByNumber(max(0, line - 1))
        if not block.isValid():
            block = self.document().lastBlock()
        if not block.isVisible() and self.reveal_line is not None:
            self.reveal_line(block.blockNumber() + 1)
        c = max(0, col - 1)
        spans = self._elisions.get(block.blockNumber())
        if spans:
            c = real_to_display_col(c, spans)
        c = to_utf16(block.text(), c)
        cursor = QtGui.QTextCursor(block)
        cursor.setPosition(block.position() + min(c, block.length() - 1))
        with self.highlighting.hold():
            self.setTextCursor(cursor)
            if center:
                self.centerCursor()

    def file_position(self, cursor: QtGui.QTextCursor) -> tuple[int, int]:
        """(1-based line, 0-based column of the file's text) of `cursor`, mapped past elisions."""
        line, col = cursor.blockNumber(), from_utf16(cursor.block().text(), cursor.positionInBlock())
        spans = self._elisions.get(line)
        return line + 1, display_to_real_col(col, spans) if spans else col

    def visible_line_range(self) -> tuple[int, int]:
        """(first, last) 1-based lines at least partly visible."""
        blocks = list(self._visible_blocks())
        if not blocks:
            return 1, 1
        return blocks[0][0] + 1, blocks[-1][0] + 1

    # -- regions ----------------------------------------------------------

    def set_regions(self, regions: list[Region]) -> None:
        """Tint these line ranges; replaces earlier regions and the mark."""
        self._regions = sorted(regions, key=lambda r: (r.start_line, -r.end_line))
        self._region_starts = [r.start_line for r in self._regions]
        self._regions_by_key = {r.key: r for r in self._regions}
        if self._marked not in self._regions_by_key:
            self._marked = None
        self.viewport().update()
        self._gutter.update()

    def regions(self) -> list[Region]:
        return list(self._regions)

    def mark_region(self, key: object | None, reveal: bool = True) -> None:
        """Draw region `key` stronger; with `reveal`, scroll it to the middle (a region taller than the
        view: its first line near the top). None clears the mark. Raises KeyError for an unknown key."""
        if key is not None and reveal:
            region = self._regions_by_key[key]
            shown = max(1, self.viewport().height() // max(1, self.fontMetrics().lineSpacing()))
            self.stream.when_loaded(min(region.end_line, region.start_line + shown),
                                    lambda: self._reveal(region, shown))
        self._marked = key
        self.viewport().update()
        self._gutter.update()

    def _reveal(self, region: Region, shown: int) -> None:
        # The scroll bar counts lines on screen, not blocks: folded lines (the #loc aliases) count none.
        doc = self.document()
        first = doc.findBlockByNumber(region.start_line - 1).firstLineNumber()
        last = doc.findBlockByNumber(region.end_line - 1)
        span = (last if last.isValid() else doc.lastBlock()).firstLineNumber() - first + 1
        above = (shown - span) // 2 if span <= shown else 2
        self.verticalScrollBar().setValue(max(0, first - above))

    def marked_key(self) -> object | None:
        return self._marked

    def region_at_line(self, line: int) -> Region | None:
        """The innermost region containing 1-based `line`."""
        best = None
        for r in self._regions[: bisect.bisect_right(self._region_starts, line)]:
            if r.end_line >= line and (
                best is None or r.end_line - r.start_line < best.end_line - best.start_line
            ):
                best = r
        return best

    # -- painting ---------------------------------------------------------

    def gutter(self) -> QtWidgets.QWidget:
        return self._gutter

    def gutter_width(self, lines: int | None = None) -> int:
        # The lines of the whole text, not those in so far: a width change relays out the document
        # (a third of a second for a million lines), and a text coming in slices would cross 10**k.
        digits = len(str(max(1, self.line_count() if lines is None else lines)))
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits + 16  # + fold markers

    def _color(self, region: Region, marked: bool) -> QtGui.QColor:
        color = QtGui.QColor(region.color if region.color is not None else "#4a90d9")
        color.setAlpha(70 if marked else 28)
        return color

    def _tint(self, region: Region, marked: bool) -> QtGui.QColor:
        """`_color` blended over the page's base colour: an opaque fill, which the raster engine paints
        many times faster than a translucent one over the whole width (it was most of a frame)."""
        color = self._color(region, marked)
        base = self.viewport().palette().color(QtGui.QPalette.ColorRole.Base)
        a = color.alphaF()
        return QtGui.QColor.fromRgbF(*(c * a + b * (1 - a) for c, b in zip(
            (color.redF(), color.greenF(), color.blueF()), (base.redF(), base.greenF(), base.blueF()))))

    def _visible_blocks(self):
        """(block number, top, bottom) of the visible blocks, in viewport y.

        Lines do not wrap and share one font, so all blocks are as tall as
        the first: one geometry query instead of one per line. Folded blocks are skipped.
        """
        block = self.firstVisibleBlock()
        if not block.isValid():
            return
        rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
        top, h = rect.top(), max(rect.height(), 1.0)
        height = self.viewport().height()
        while block.isValid() and top < height:
            if block.isVisible():
                yield block.blockNumber(), top, top + h
                top += h
            block = block.next()

    def _visible_region_spans(self):
        """(region, marked, top y, bottom y) for regions on screen."""
        blocks = list(self._visible_blocks())
        if not blocks or not self._regions:
            return
        first, last = blocks[0][0] + 1, blocks[-1][0] + 1
        numbers = [b[0] + 1 for b in blocks]  # not consecutive where lines are folded
        for r in self._regions[: bisect.bisect_right(self._region_starts, last)]:
            if r.end_line < first:
                continue
            a = bisect.bisect_left(numbers, r.start_line)
            b = bisect.bisect_right(numbers, r.end_line) - 1
            if a <= b:
                yield r, r.key == self._marked, blocks[a][1], blocks[b][2]

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        if self._regions:
            painter = QtGui.QPainter(self.viewport())
            width = self.viewport().width()
            for r, marked, top, bottom in self._visible_region_spans():
                rect = QtCore.QRectF(0, top, width, bottom - top)
                painter.fillRect(rect, self._tint(r, marked))
                if marked:
                    pen = QtGui.QPen(self._color(r, True).darker(150))
                    painter.setPen(pen)
                    painter.drawLine(rect.topLeft(), rect.topRight())
                    painter.drawLine(rect.bottomLeft(), rect.bottomRight())
            painter.end()
        super().paintEvent(event)
        self.highlighting.painted(*self.visible_line_range())

    def _paint_gutter(self, gutter: QtWidgets.QWidget, event: QtGui.QPaintEvent) -> None:
        painter = QtGui.QPainter(gutter)
        pal = self.palette()
        painter.fillRect(event.rect(), pal.color(QtGui.QPalette.ColorRole.AlternateBase))
        for r, marked, top, bottom in self._visible_region_spans():
            color = QtGui.QColor(self._color(r, True))
            color.setAlpha(255 if marked else 140)
            painter.fillRect(QtCore.QRectF(0, top, 4 if not marked else 6, bottom - top), color)
        painter.setPen(pal.color(QtGui.QPalette.ColorRole.PlaceholderText))
        current = self.textCursor().blockNumber()
        w = gutter.width() - 4
        h = self.fontMetrics().height()
        plain, bold = QtGui.QFont(painter.font()), QtGui.QFont(painter.font())
        bold.setBold(True)
        for n, top, _ in self._visible_blocks():
            painter.setFont(bold if n == current else plain)
            painter.drawText(
                0, int(top), w - 10, h, QtCore.Qt.AlignmentFlag.AlignRight, str(n + 1)
            )
            for paint in self.gutter_painters:
                paint(painter, n, top, h)
        painter.end()

    # -- internals --------------------------------------------------------

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._gutter.setGeometry(cr.left(), cr.top(), self.gutter_width(), cr.height())
        self._highlight_visible()

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802
        super().showEvent(event)
        self._highlight_visible()

    def _update_gutter_width(self, *_args, lines: int | None = None) -> None:
        width = self.gutter_width(lines)
        if width != self.viewportMargins().left():
            self.setViewportMargins(width, 0, 0, 0)
            cr = self.contentsRect()
            self._gutter.setGeometry(cr.left(), cr.top(), width, cr.height())

    @QtCore.Slot(QtCore.QRect, int)
    def _on_update_request(self, rect: QtCore.QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    @QtCore.Slot()
    def _highlight_visible(self, *_args) -> None:
        self.highlighting.visible()

    @QtCore.Slot(int, int, int)
    def _on_contents_change(self, _pos: int, removed: int, added: int) -> None:
        if removed or added:
            self.highlighting.forget()  # the look-ahead is planned again at the next paint
            self._rehighlight_timer.start()

    @QtCore.Slot()
    def _highlight_current_line(self) -> None:
        sel = QtWidgets.QTextEdit.ExtraSelection()
        color = QtGui.QColor(self.palette().color(QtGui.QPalette.ColorRole.Highlight))
        color.setAlpha(40)
        sel.format.setBackground(color)
        sel.format.setProperty(QtGui.QTextFormat.Property.FullWidthSelection, True)
        sel.cursor = self.textCursor()
        sel.cursor.clearSelection()
        self.setExtraSelections([sel, *self._marks])

    def set_marks(self, marks: list[QtWidgets.QTextEdit.ExtraSelection]) -> None:
        """Extra formats drawn over the text (error underlines); [] clears them."""
        self._marks = list(marks)
        self._highlight_current_line()

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:  # noqa: N802
        if event.matches(QtGui.QKeySequence.StandardKey.MoveToEndOfDocument) and self.stream.loading:
            self.goto(self.line_count(), 1, center=False)  # the end of the text, once it is in
            event.accept()
            return
        if paging.handles(event):
            paging.page(self, event)  # see paging.py: Qt's own step cost most of a frame
            event.accept()
            return
        super().keyPressEvent(event)

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802
        self._press_pos = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802
        super().mouseReleaseEvent(event)
        pos = event.position().toPoint()
        if (
            event.button() == QtCore.Qt.MouseButton.LeftButton
            and self._press_pos is not None
            and (pos - self._press_pos).manhattanLength() < 4
        ):
            line = self.cursorForPosition(pos).blockNumber() + 1
            region = self.region_at_line(line)
            if region is not None:
                self.sig_region_clicked.emit(region.key)
        self._press_pos = None
