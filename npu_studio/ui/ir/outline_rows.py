"""The outline's rows, made and freed off the GUI thread.

A 1,000,000-line snapshot has over 100,000 outline items; making a QTreeWidgetItem for each on the
GUI thread stalled the window for seconds. A QTreeWidgetItem is no QObject and belongs to no thread,
so the navigator's building thread makes them (`OutlineRows.build`), all under one holder row in no
tree. The outline then shows the holder's children as its top rows (`setRootIndex`): taking it in
and out is one row for the model, so the GUI thread never walks the items in Python.
Rows no longer shown are freed on a thread too (`discard`): a C++ delete per row, plus each
Python wrapper, was a quarter of a second of GUI time.
"""

from __future__ import annotations

import os
import threading

import shiboken6
from PySide6 import QtCore, QtWidgets

from ...core.ir.nav_index import NavIndex

PLACE = QtCore.Qt.ItemDataRole.UserRole  # (line, col) of a row
NAME = QtCore.Qt.ItemDataRole.UserRole + 1  # the symbol's whole name (the row shows it without the shared prefix)
PAUSE_EVERY_ROWS = 1_000  # the threads wait here while the user scrolls or types (navigation.Activity.pause)


def shared_prefix(names: list[str]) -> str:
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


def _no_pause() -> None:
    pass


class OutlineRows:
    """One row per outline item, nested by depth under `holder`; `by_item[(start line, name)]` is the
    row of an item (the first, should two share both)."""

    def __init__(self, holder: QtWidgets.QTreeWidgetItem, by_item: dict[tuple[int, str], QtWidgets.QTreeWidgetItem]):
        self.holder, self.by_item = holder, by_item

    @classmethod
    def build(cls, index: NavIndex, pause=None) -> OutlineRows:
        """Made on any thread; `pause()` is called every few rows."""
        pause = pause or _no_pause
        holder = QtWidgets.QTreeWidgetItem()
        by_item: dict[tuple[int, str], QtWidgets.QTreeWidgetItem] = {}
        parents = [holder]
        prefix = shared_prefix([item.name for item in index.outline])
        for n, item in enumerate(index.outline):
            if not n % PAUSE_EVERY_ROWS:
                pause()
            del parents[item.depth + 1:]
            shown = item.name.replace(prefix, "") if prefix else item.name
            row = QtWidgets.QTreeWidgetItem(parents[-1], [f"{shown}  ({item.kind})"])
            row.setData(0, NAME, item.name)
            row.setData(0, PLACE, (item.start_line, 0))
            row.setToolTip(0, f"{item.kind} {item.name}, lines {item.start_line}-{item.end_line}")
            by_item.setdefault((item.start_line, item.name), row)
            parents.append(row)
        return cls(holder, by_item)

    def discard(self, pause=None) -> None:
        """Free the rows on a thread of their own; the holder must be in no tree."""
        holder, by_item = self.holder, self.by_item
        self.holder, self.by_item = None, {}
        threading.Thread(target=_free, args=(holder, by_item, pause or _no_pause), name="ir-outline-free",
                         daemon=True).start()


def _free(holder: QtWidgets.QTreeWidgetItem, by_item: dict, pause) -> None:
    """Delete a few rows per call (each call holds the GIL, which the GUI thread waits for)."""
    while by_item:
        for _ in range(min(PAUSE_EVERY_ROWS, len(by_item))):
            by_item.popitem()  # the Python wrappers
        pause()
    for i in range(holder.childCount() - 1, -1, -1):
        if not i % PAUSE_EVERY_ROWS:
            pause()
        shiboken6.delete(holder.takeChild(i))  # with its own rows
    shiboken6.delete(holder)
