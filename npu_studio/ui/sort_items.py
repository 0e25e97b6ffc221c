"""Table items that sort by a stored value: numbers as numbers, anything else by its text.

PySide6 6.8 sends `super().__lt__` on an item subclass back to the Python override, so a fallback
through the base class recurses until the stack overflows (a segfault on a sorted restore). The
fallback here compares the texts itself and never calls the base class.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

VALUE_ROLE = QtCore.Qt.ItemDataRole.UserRole


def value_less(a, b, text_a: str, text_b: str) -> bool:
    """Numbers compare as numbers; blanks sort after values; anything else compares as text."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a < b
    if a is None or b is None:
        if a is None and b is None:
            return text_a < text_b
        return a is not None
    if type(a) is type(b):
        try:
            return bool(a < b)
        except TypeError:
            pass
    return text_a < text_b


class ValueSortTableItem(QtWidgets.QTableWidgetItem):
    def __lt__(self, other: QtWidgets.QTableWidgetItem) -> bool:  # noqa: D105
        return value_less(self.data(VALUE_ROLE), other.data(VALUE_ROLE), self.text(), other.text())


class ValueSortStandardItem(QtGui.QStandardItem):
    def __lt__(self, other: QtGui.QStandardItem) -> bool:  # noqa: D105
        return value_less(self.data(VALUE_ROLE), other.data(VALUE_ROLE), self.text(), other.text())
