"""The outline and the list of uses beside an IrView, driven by its IrNavigator.

The outline (executables, variants, exports, functions, dispatch regions and sites) follows the
cursor: the innermost item holding the cursor's line is selected. The uses list shows the lines
where the name asked about is defined and used; activating a row goes there.
"""

from __future__ import annotations

import os

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir.nav_index import Entity, NavIndex
from .navigation import IrNavigator

_PLACE = QtCore.Qt.ItemDataRole.UserRole  # (line, col) of a row
_NAME = QtCore.Qt.ItemDataRole.UserRole + 1  # the symbol's whole name (the row shows it without the shared prefix)


def _shared_prefix(names: list[str]) -> str:
    """What every symbol IREE made starts with (`@resnet50$async_`): left out of the rows, which are
    narrow and would otherwise all read `@resnet50$async_...`. The tooltip keeps the whole name."""
    symbols = [n for n in names if n.startswith("@") and "$" in n]  # not @__device_0 and its like
    if len(symbols) < 2:
        return ""
    dispatches = [n for n in symbols if "dispatch_" in n]
    common = os.path.commonprefix(dispatches if len(dispatches) > 1 else symbols)
    if "dispatch_" in common:  # @resnet50$async_dispatch_N...: rows read dispatch_N...
        return common[:common.index("dispatch_")]
    return common[:common.rfind("$") + 1] if "$" in common else ""


class OutlineTree(QtWidgets.QTreeWidget):
    def __init__(self, navigator: IrNavigator):
        super().__init__()
        self.navigator = navigator
        self.setAccessibleName("IR outline")
        self.setHeaderHidden(True)
        self.setUniformRowHeights(True)  # thousands of dispatches stay quick
        self._starts: list[tuple[int, QtWidgets.QTreeWidgetItem]] = []
        navigator.sig_outline.connect(self.show_outline)
        navigator.view.cursorPositionChanged.connect(self.follow_cursor)
        self.itemActivated.connect(self._go)
        self.itemClicked.connect(self._go)

    def show_outline(self, index: NavIndex) -> None:
        # No reference kept: the navigator lets an old index go on a thread, if nothing else holds it.
        self.clear()
        self._starts = []
        parents: list[QtWidgets.QTreeWidgetItem] = []
        prefix = _shared_prefix([item.name for item in index.outline])
        for item in index.outline:
            del parents[item.depth:]
            parent = parents[-1] if parents else self.invisibleRootItem()
            shown = item.name.replace(prefix, "") if prefix else item.name
            row = QtWidgets.QTreeWidgetItem(parent, [f"{shown}  ({item.kind})"])
            row.setData(0, _NAME, item.name)
            row.setData(0, _PLACE, (item.start_line, 0))
            row.setToolTip(0, f"{item.kind} {item.name}, lines {item.start_line}-{item.end_line}")
            self._starts.append((item.start_line, row))
            parents.append(row)
        self.expandToDepth(1)
        self.follow_cursor()

    def follow_cursor(self) -> None:
        index = self.navigator.index
        if index is None:
            return
        item = index.outline_at(self.navigator.view.textCursor().blockNumber() + 1)
        row = next((r for line, r in self._starts if item is not None and line == item.start_line
                    and r.data(0, _PLACE)[0] == item.start_line and r.data(0, _NAME) == item.name), None)
        self.blockSignals(True)
        if row is None:
            self.clearSelection()
        else:
            self.setCurrentItem(row)
            self.scrollToItem(row)
        self.blockSignals(False)

    def selected_name(self) -> str | None:
        row = self.currentItem()
        return row.data(0, _NAME) if row is not None and row.isSelected() else None

    def _go(self, row: QtWidgets.QTreeWidgetItem, _column: int = 0) -> None:
        self.navigator.jump(*row.data(0, _PLACE))


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
            row.setData(_PLACE, (span.line, span.col))
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
        self.navigator.jump(*row.data(_PLACE))


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
