"""The outline and the list of uses beside an IrView, driven by its IrNavigator.

The outline (executables, variants, exports, functions, dispatch regions and sites) follows the
cursor: the innermost item holding the cursor's line is selected. The uses list shows the lines
where the name asked about is defined and used; activating a row goes there.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir.nav_index import Entity, NavIndex
from .navigation import IrNavigator
from .outline_rows import NAME, PLACE, OutlineRows

EXPAND_UP_TO_ROWS = 5_000  # a bigger outline opens with its top rows closed (Qt expands ~10 µs a row)


class OutlineTree(QtWidgets.QTreeWidget):
    """The outline of the navigator's index. Its rows hang under one hidden holder row (the root
    index), made on the navigator's building thread (outline_rows.py): topLevelItem() and
    topLevelItemCount() answer for the rows shown at the top."""

    def __init__(self, navigator: IrNavigator):
        super().__init__()
        self.navigator = navigator
        self.setAccessibleName("IR outline")
        self.setHeaderHidden(True)
        self.setUniformRowHeights(True)  # thousands of dispatches stay quick
        self._rows: OutlineRows | None = None
        navigator.outline_builder = OutlineRows.build
        navigator.sig_outline.connect(self.show_outline)
        navigator.view.sig_text_shown.connect(self._stale)
        navigator.view.cursorPositionChanged.connect(self.follow_cursor)
        self.itemActivated.connect(self._go)
        self.itemClicked.connect(self._go)

    def show_outline(self, index: NavIndex, rows: OutlineRows | None = None) -> None:
        """Show `index`'s outline: `rows` made beforehand by OutlineRows.build (else made here)."""
        if rows is None:
            rows = OutlineRows.build(index)
        # No reference to the index kept: the navigator lets an old one go on a thread if nothing holds it.
        old, self._rows = self._rows, rows
        if old is not None:
            self.takeTopLevelItem(0)
            old.discard(self.navigator.activity.pause)
        self.addTopLevelItem(rows.holder)
        self.setRootIndex(self.indexFromItem(rows.holder))
        if len(rows.by_item) <= EXPAND_UP_TO_ROWS:
            self.expandToDepth(1)
        self.setEnabled(True)
        self.setToolTip("")
        self.follow_cursor()

    def _stale(self) -> None:
        """Another text is on show: until its own outline comes, the rows shown are the last text's and
        would lead to wrong lines, so they are greyed out and take no clicks."""
        if self._rows is not None:
            self.setEnabled(False)
            self.setToolTip("The outline of the text shown before; this one is being indexed")

    def topLevelItemCount(self) -> int:  # noqa: N802 (Qt's name)
        return self._rows.holder.childCount() if self._rows is not None else 0

    def topLevelItem(self, i: int) -> QtWidgets.QTreeWidgetItem | None:  # noqa: N802 (Qt's name)
        return self._rows.holder.child(i) if self._rows is not None else None

    def follow_cursor(self) -> None:
        index = self.navigator.index
        if index is None:
            return
        item = index.outline_at(self.navigator.view.textCursor().blockNumber() + 1)
        row = self._rows.by_item.get((item.start_line, item.name)) if item is not None and self._rows else None
        self.blockSignals(True)
        if row is None:
            self.clearSelection()
        else:
            self.setCurrentItem(row)
            self.scrollToItem(row)
        self.blockSignals(False)

    def selected_name(self) -> str | None:
        row = self.currentItem()
        return row.data(0, NAME) if row is not None and row.isSelected() else None

    def _go(self, row: QtWidgets.QTreeWidgetItem, _column: int = 0) -> None:
        self.navigator.jump(*row.data(0, PLACE))


class UsesList(QtWidgets.QListWidget):
    def __init__(self, navigator: IrNavigator):
        super().__init__()
        self.navigator = navigator
        self.setAccessibleName("Uses")
        navigator.sig_uses.connect(self.show_uses)
        navigator.view.sig_text_shown.connect(self._forget)  # uses of another text mean nothing here
        navigator.sig_index_ready.connect(self._follow_edit)
        self._anchor: tuple[str, QtGui.QTextCursor] | None = None  # the name listed; a cursor follows edits
        self.itemActivated.connect(self._go)
        self.itemClicked.connect(self._go)
        self.hide()

    def show_uses(self, entity: Entity) -> None:
        self.clear()
        index = self.navigator.index
        first = entity.definition or (entity.uses[0] if entity.uses else None)
        if first is not None:
            block = self.navigator.view.document().findBlockByNumber(first.line - 1)
            self._anchor = (entity.name, QtGui.QTextCursor(block))
            self._anchor[1].setPosition(block.position() + first.col)
        places = ([("definition", entity.definition)] if entity.definition else []) + [("use", u) for u in entity.uses]
        for what, span in places:
            text = index.lines[span.line - 1].strip() if index is not None else ""
            row = QtWidgets.QListWidgetItem(f"{span.line}: {what}: {text[:140]}")
            row.setData(PLACE, (span.line, span.col))
            self.addItem(row)
        self.setToolTip(f"{entity.name}: {len(entity.uses)} uses")
        self.show()
        split = self.parentWidget()
        if isinstance(split, QtWidgets.QSplitter) and split.sizes()[-1] < 3 * self.fontMetrics().height():
            total = sum(split.sizes())
            split.setSizes([total - total // 4, total // 4])  # shown at a quarter of the height

    def _forget(self) -> None:
        self.clear()
        self.hide()
        self._anchor = None

    def _follow_edit(self) -> None:
        """The text was indexed again after an edit: list the same name's places anew (lines moved)."""
        if self._anchor is None or not self.isVisible():
            return
        name, cursor = self._anchor
        entity = self.navigator.entity_at_cursor(cursor)
        if entity is not None and entity.name == name:
            self.show_uses(entity)
        else:  # the name is gone from where it was
            self._forget()

    def _go(self, row: QtWidgets.QListWidgetItem) -> None:
        self.navigator.jump(*row.data(PLACE))


def navigable(view, navigator: IrNavigator) -> tuple[QtWidgets.QWidget, OutlineTree, UsesList]:
    """A widget holding the outline, `view` and the uses list (shown once asked for)."""
    outline, uses = OutlineTree(navigator), UsesList(navigator)
    right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
    right.addWidget(view)
    right.addWidget(uses)
    right.setStretchFactor(0, 4)
    right.setStretchFactor(1, 1)
    split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
    split.addWidget(outline)
    split.addWidget(right)
    split.setStretchFactor(0, 1)
    split.setStretchFactor(1, 4)
    split.setSizes([220, 900])
    return split, outline, uses
