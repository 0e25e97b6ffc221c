"""When an IrView's lines get highlighted and laid out: the visible ones at once, the pages around them
after the frame is painted, a few lines at a time.

Lexing a line is Python and laying out a formatted line is Qt; both cost more than painting it. The
visible lines must be done before they paint (else they show uncoloured). The page below and the
page above are done ahead, so a page down or up finds them ready and only paints. That look-ahead
runs after the paint, in slices of SLICE_LINES, so input that arrives meanwhile waits for one slice
at most, never for a page of lexing: Qt posts a widget's repaint at low priority, after timers, so
a zero timer started on scroll (as before) ran the whole look-ahead inside the frame.

A jump far away (more than DEFER_OVER visible lines not yet highlighted) paints the text first and
colours it in the next frame: lexing and laying out a page of formatted lines doubled a jump's frame.
A new text is coloured before its first paint.
"""

from __future__ import annotations

from contextlib import contextmanager

from PySide6 import QtCore

SLICE_LINES = 12  # lines lexed and laid out per turn of the event loop while idle
MARGIN = 5  # lines past the last visible one highlighted with it (a partly visible line, a scroll step)
DEFER_OVER = 12  # visible lines still to highlight above which they are coloured after the paint


class HighlightScheduler(QtCore.QObject):
    """Drives `view.highlighter` for `view` (an IrView); see the module doc."""

    def __init__(self, view):
        super().__init__(view)
        self._view = view
        self._ahead: list[tuple[int, int]] = []  # 0-based inclusive block ranges still to prepare
        self._painted: tuple[int, int] | None = None  # the visible range the look-ahead was planned for
        self._timer = QtCore.QTimer(self, singleShot=True, interval=0, timeout=self._step)
        self._held = 0
        self._deferred = False  # the visible lines wait for the paint: colour them first after it
        self._urgent = False  # the first range of _ahead is the view's own: done in one step

    @contextmanager
    def hold(self):
        """Scrolls inside only highlight where the view ends up (a jump scrolls the cursor into
        view, then centres it: two pages, of which one is seen)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self.visible()

    def visible(self, defer: bool = True) -> None:
        """Highlight the lines on screen now (before they paint), or with `defer`, when many are not
        yet, right after the paint."""
        if self._held:
            return
        first, last = self._view.visible_line_range()
        a, b = first - 1, last - 1 + MARGIN
        hl = self._view.highlighter
        if defer and self._view.isVisible() and sum(not hl.is_highlighted(n) for n in range(a, b + 1)) > DEFER_OVER:
            self._deferred = True
            return
        hl.ensure_highlighted(a, b)

    def painted(self, first: int, last: int) -> None:
        """The view painted lines first..last (1-based): plan the pages around them, start when idle."""
        deferred, self._deferred = self._deferred, False
        if self._painted == (first, last) and not deferred:
            if self._ahead and not self._timer.isActive():  # after colouring the view: the look-ahead goes on
                self._timer.start()
            return
        self._painted = (first, last)
        page = last - first + 1
        below = (last + MARGIN, last - 1 + page + MARGIN)  # 0-based
        above = (max(0, first - 1 - page), first - 2)
        self._ahead = [r for r in (below, above) if r[0] <= r[1]]
        self._urgent = deferred
        if deferred:
            self._ahead.insert(0, (first - 1, last - 1 + MARGIN))
        self._timer.start()

    def forget(self) -> None:
        """Another text or document: nothing planned holds."""
        self._ahead, self._painted, self._deferred, self._urgent = [], None, False, False
        self._timer.stop()

    @QtCore.Slot()
    def _step(self) -> None:
        if not self._ahead:
            return
        a, b = self._ahead[0]
        urgent, self._urgent = self._urgent, False
        end = b if urgent else min(b, a + SLICE_LINES - 1)
        doc = self._view.document()
        self._view.highlighter.ensure_highlighted(a, end)
        layout = doc.documentLayout()
        block = doc.findBlockByNumber(a)
        while block.isValid() and block.blockNumber() <= end:
            layout.blockBoundingRect(block)  # lays the block out now, not in the next frame
            block = block.next()
        if end >= b or not block.isValid():
            self._ahead.pop(0)
        else:
            self._ahead[0] = (end + 1, b)
        if self._ahead and not urgent:  # after the view's own lines, its repaint comes first
            self._timer.start()

    def pending(self) -> bool:
        """Look-ahead work is left (tests and benchmarks wait for it)."""
        return bool(self._ahead)
