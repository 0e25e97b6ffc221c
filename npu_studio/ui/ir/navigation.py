"""Go to definition, find uses, hover, back and forward in an IrView, over the core navigation index.

`IrNavigator(view)` hooks a view without subclassing it. The index (core/ir/nav_index) is built on a
thread of its own whenever another text is shown or an edit settles; a result for a text that is no
longer on show is dropped. Hover types come from MLIR's parse in a child Python when the text parses
(nav_describe.parsed_types_in_child), else from the text, marked "as printed".

The build is Python, so it competes for the GIL with the GUI thread: it waits while the user scrolls,
types or clicks (and while a new text paints first), so frames stay short; the index is frozen out of
the cyclic collector's walks once built (gui_gc.long_lived_build).

Keys: F12 or Ctrl+click goes to the definition of the name under the cursor; Shift+F12 lists its
uses (`sig_uses`); Alt+Left / Alt+Right go back and forward through the places navigation left.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir import nav_index
from ...core.ir.default_folds import FoldsBySlice
from ...core.ir.nav_describe import describe, parsed_types_in_child
from ...core.ir.nav_scan import LineCache
from ..gui_gc import freeze_long_lived, long_lived_build
from .folding import Folding
from .ir_view import IrView

EDIT_SETTLES_MS = 250  # an edit re-indexes after this long without another
SWITCH_DEFAULT, SWITCH_WHILE_INDEXING = sys.getswitchinterval(), 0.0005  # seconds
TYPES_UP_TO_LINES = 300_000  # bigger texts: hover types as printed only (the parse would take minutes)
QUIET_S = 0.2  # the build waits until the view has seen no input, scroll or new text for this long
_ACTIVITY_EVENTS = {QtCore.QEvent.Type.KeyPress, QtCore.QEvent.Type.Wheel, QtCore.QEvent.Type.MouseButtonPress,
                    QtCore.QEvent.Type.MouseMove, QtCore.QEvent.Type.Resize}


class Activity:
    """When the view was last busy, read by the building thread (a float: no Qt object crosses)."""

    def __init__(self):
        self.until = 0.0

    def mark(self, *_args) -> None:
        self.until = time.monotonic() + QUIET_S

    def pause(self) -> None:
        """Called by the builder every few lines: sleep (handing the GIL to the GUI) while it is busy."""
        while time.monotonic() < self.until:
            time.sleep(0.02)


class History:
    """Places (line, column) navigation left, and the ones gone back over."""

    def __init__(self, limit: int = 100):
        self.back: list[tuple[int, int]] = []
        self.forward: list[tuple[int, int]] = []
        self._limit = limit

    def leave(self, place: tuple[int, int]) -> None:
        if not self.back or self.back[-1] != place:
            self.back.append(place)
            del self.back[: -self._limit]
        self.forward.clear()


LET_GO_WAIT_S = 1.0  # how long an index let go waits for the GUI's frames that still hold it


def _let_go(held: list) -> None:
    """Take the index out of `held` and free it on a thread, a slice at a time, once nothing else holds
    it (the frames of the GUI's thread that handed it over let go within moments; a holder that keeps it
    frees it itself): dropped on the GUI's thread, a million-line text's index was freed in one C call
    that held the GIL for a second."""
    if not held or held[0] is None:
        return

    def work() -> None:
        index = held.pop()
        deadline = time.monotonic() + LET_GO_WAIT_S
        while sys.getrefcount(index) > 2 and time.monotonic() < deadline:  # this name and the argument
            time.sleep(0.01)
        if sys.getrefcount(index) <= 2:
            index.release_gradually()

    threading.Thread(target=work, name="ir-navigation-release", daemon=True).start()


def _retire(owner: IrNavigator) -> None:
    """Take `owner.index` away and let it go (see _let_go)."""
    held, owner.index = [owner.index], None
    _let_go(held)


class IrNavigator(QtCore.QObject):
    sig_index_ready = QtCore.Signal()  # the index of the text on show is built
    sig_uses = QtCore.Signal(object)  # Entity whose uses were asked for
    sig_outline = QtCore.Signal(object, object)  # NavIndex, what outline_builder made of it (None: no builder)

    def __init__(self, view: IrView):
        super().__init__(view)
        self.view = view
        self.index: nav_index.NavIndex | None = None
        self.types: dict | None = None
        self.history = History()
        self.folding = Folding(view)
        self._cache = LineCache()
        self._generation = 0
        self._indexed = -1  # the generation self.index was built for: older after an edit, until re-indexed
        self._after_index: QtGui.QTextCursor | None = None  # where F12 was asked while the index was stale
        self._building = False
        self._wanted: tuple[int, str] | None = None  # the newest text to index while a build runs
        self._new_text = True
        self._settle = QtCore.QTimer(self, singleShot=True, interval=EDIT_SETTLES_MS, timeout=self._rebuild)
        # The worker hands its result over a queue, polled here: a thread holding no Qt object cannot
        # end up running a QObject's destructor off the GUI thread.
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._poll = QtCore.QTimer(self, interval=30, timeout=self._take_result)
        self.activity = Activity()
        # outline_builder(index, pause), set by the outline panel: its rows, made on the building thread
        # (a huge outline took seconds on the GUI's) and handed over with the index; rows of an index
        # dropped as outdated are given back with their discard(pause).
        self.outline_builder: Callable[[nav_index.NavIndex, Callable[[], None]], object] | None = None
        self._slice_folds = FoldsBySlice()  # the default folds of the text on show, as its slices come
        view.sig_text_shown.connect(self._on_text_shown)
        view.stream.sig_lines_added.connect(self._on_lines_added)
        view.connect_contents_change(self._on_contents_change)
        view.viewport().installEventFilter(self)
        view.installEventFilter(self)  # keys: the build waits while the user pages
        view.verticalScrollBar().valueChanged.connect(self.activity.mark)
        view.horizontalScrollBar().valueChanged.connect(self.activity.mark)
        self._add_actions()
        self._on_text_shown()

    def _add_actions(self) -> None:
        def action(text: str, keys, slot) -> QtGui.QAction:
            a = QtGui.QAction(text, self.view, triggered=slot)
            a.setShortcuts([QtGui.QKeySequence(k) for k in keys])
            a.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetShortcut)
            self.view.addAction(a)
            return a

        self.definition_action = action("Go to Definition", ["F12"], self.go_to_definition)
        self.uses_action = action("Find All Uses", ["Shift+F12"], self.find_uses)
        self.back_action = action("Back", ["Alt+Left"], self.go_back)
        self.forward_action = action("Forward", ["Alt+Right"], self.go_forward)

    # -- building the index ---------------------------------------------------------------------

    @QtCore.Slot()
    @property
    def building(self) -> bool:
        """An index is being built (folds and hover may still change)."""
        return self._building

    def _on_text_shown(self) -> None:
        self.activity.mark()  # the first paint of the new text comes before the build
        self._generation += 1
        self._new_text = True
        _retire(self)
        self.types = None
        text = self.view.text()
        # A big text shows its first lines first (streaming.py): their folds now, the rest's as they come.
        self._slice_folds = FoldsBySlice()
        # (a phase's own document, or a text set whole: all of it)
        head = self.view.stream.last_slice[1] if self.view.stream.loading else text
        self.folding.set_ranges(self._slice_folds.add(head), fold_defaults=True)
        self._start(text)

    def _on_lines_added(self, first: int, last: int) -> None:
        self.folding.add_ranges(self._slice_folds.add(self.view.stream.last_slice[1]), first, last)

    @QtCore.Slot(int, int, int)
    def _on_contents_change(self, _pos: int, removed: int, added: int) -> None:
        if self.view.is_editable() and (removed or added):  # the read-only text changes by set_text only
            self._generation += 1
            self._settle.start()

    def _rebuild(self) -> None:
        self._start(self.view.text())

    def _start(self, text: str) -> None:
        if self._building:
            self._wanted = (self._generation, text)
            return
        self._building = True
        generation, cache, results, pause = self._generation, self._cache, self._results, self.activity.pause
        build_outline = self.outline_builder
        with_types = self._new_text and self.view.line_count() < TYPES_UP_TO_LINES  # not text.count: a GUI-side scan

        def work() -> None:
            # The scan is Python: hand the GIL back to the GUI thread often, so frames stay short.
            sys.setswitchinterval(SWITCH_WHILE_INDEXING)
            try:
                with long_lived_build():
                    index = nav_index.build(text, cache, pause)
                    outline = build_outline(index, pause) if build_outline is not None else None
            finally:
                sys.setswitchinterval(SWITCH_DEFAULT)
            results.put((generation, index, None, outline))
            del index, outline  # the GUI's now: this thread's frame must not keep them (see _let_go)
            if with_types:  # the index first, types when the child has parsed
                types = parsed_types_in_child(text)  # a child parses; its answer becomes a dict here
                freeze_long_lived()
                results.put((generation, None, types, None))
            results.put(None)

        threading.Thread(target=work, name="ir-navigation-index", daemon=True).start()
        self._poll.start()

    def _take_result(self) -> None:
        while not self._results.empty():
            result = self._results.get()
            if result is None:
                self._building = False
                self._poll.stop()
                if self._wanted is not None:
                    wanted, self._wanted = self._wanted, None
                    if wanted[0] == self._generation:
                        self._start(wanted[1])
            elif result[1] is None:
                if result[0] == self._generation:
                    self.types = result[2]
            else:
                self._on_built(*result)

    def _on_built(self, generation: int, index, types, outline) -> None:
        if generation != self._generation:  # outdated: freed off the GUI's thread
            if outline is not None:
                outline.discard(self.activity.pause)
            held = [index]
            del index
            _let_go(held)
        else:
            first = self._new_text
            _retire(self)
            self.index, self._new_text, self._indexed = index, False, generation
            if types is not None:
                self.types = types
            elif not first:
                self.types = None  # an edit: MLIR's types may no longer hold
            self.folding.set_ranges(index.folds_by_start, fold_defaults=False)
            self.sig_outline.emit(index, outline)
            self.sig_index_ready.emit()
            asked, self._after_index = self._after_index, None
            if asked is not None and asked.position() == self.view.textCursor().position():
                self.go_to_definition(asked)  # the user has not moved since: go now

    # -- navigating -----------------------------------------------------------------------------

    def entity_at_cursor(self, cursor: QtGui.QTextCursor | None = None):
        """The indexed name at `cursor`; None also when an edit since the index moved the lines involved."""
        if self.index is None:
            return None
        line, col = self.view.file_position(cursor or self.view.textCursor())
        entity = self.index.entity_at(line, col) or (self.index.entity_at(line, col - 1) if col else None)
        if entity is None or self._indexed == self._generation:
            return entity
        places = [line] + ([entity.definition.line] if entity.definition else [])
        return entity if all(self._line_unchanged(n) for n in places) else None

    def _line_unchanged(self, line: int) -> bool:
        """Line `line` of the document reads as the indexed text's (an edit elsewhere did not move it)."""
        block = self.view.document().findBlockByNumber(line - 1)
        return block.isValid() and line <= len(self.index.lines) and block.text() == self.index.lines[line - 1]

    @property
    def stale(self) -> bool:
        """The text was edited since the index was built."""
        return self.index is not None and self._indexed != self._generation

    def _place(self) -> tuple[int, int]:
        line, col = self.view.file_position(self.view.textCursor())
        return line, col

    def jump(self, line: int, col: int = 0) -> None:
        """Go to 1-based `line`, 0-based file column `col`, leaving the current place in the history."""
        self.history.leave(self._place())
        self.view.goto(line, col + 1)

    def go_to_definition(self, cursor: QtGui.QTextCursor | None = None) -> bool:
        entity = self.entity_at_cursor(cursor)
        if entity is None and self.index is None and self._building:  # a new text: go once it is indexed
            self._after_index = QtGui.QTextCursor(cursor or self.view.textCursor())
            return False
        if entity is None and self.stale:  # index the edited text now, and go once it is indexed
            self._after_index = QtGui.QTextCursor(cursor or self.view.textCursor())
            self._settle.stop()
            self._rebuild()
            return False
        if entity is None or entity.definition is None:
            return False
        self.jump(entity.definition.line, entity.definition.col)
        return True

    def find_uses(self):
        entity = self.entity_at_cursor()
        if entity is not None:
            self.sig_uses.emit(entity)
        return entity

    def go_back(self) -> None:
        if self.history.back:
            self.history.forward.append(self._place())
            line, col = self.history.back.pop()
            self.view.goto(line, col + 1)

    def go_forward(self) -> None:
        if self.history.forward:
            self.history.back.append(self._place())
            line, col = self.history.forward.pop()
            self.view.goto(line, col + 1)

    def hover_text(self, pos: QtCore.QPoint) -> str | None:
        entity = self.entity_at_cursor(self.view.cursorForPosition(pos))
        if entity is None or self.index is None:
            return None
        return describe(self.index, entity, self.types)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind in _ACTIVITY_EVENTS:
            self.activity.mark()
        if obj is self.view:
            return False
        if kind == QtCore.QEvent.Type.ToolTip:
            text = self.hover_text(event.pos())
            if text is None:
                return False  # another filter may have a tooltip here (parameters)
            QtWidgets.QToolTip.showText(event.globalPos(), text, self.view)
            return True
        if (kind == QtCore.QEvent.Type.MouseButtonRelease and event.button() == QtCore.Qt.MouseButton.LeftButton
                and event.modifiers() & QtCore.Qt.KeyboardModifier.ControlModifier):
            # After the view's own release: a release inside a selection puts the cursor under the mouse,
            # which after our jump had scrolled the view was another line.
            cursor = self.view.cursorForPosition(event.position().toPoint())
            QtCore.QTimer.singleShot(0, self, lambda: self.go_to_definition(cursor))
        return False
