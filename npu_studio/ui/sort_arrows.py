"""Header sort arrows that point the way most desktops draw them.

Qt draws a descending sort with an upward arrow (QHeaderView maps DescendingOrder to
QStyleOptionHeader.SortUp), so a table of the biggest first showed an arrow pointing up.
This style swaps the two for the headers it is set on: up for ascending, down for descending.
"""

from __future__ import annotations

from PySide6 import QtWidgets

Header = QtWidgets.QStyleOptionHeader


class SortArrowStyle(QtWidgets.QProxyStyle):
    def drawPrimitive(self, element, option, painter, widget=None):  # noqa: N802 - Qt's name
        if element == QtWidgets.QStyle.PrimitiveElement.PE_IndicatorHeaderArrow and isinstance(option, Header):
            swapped = Header(option)
            swapped.sortIndicator = {Header.SortIndicator.SortUp: Header.SortIndicator.SortDown,
                                     Header.SortIndicator.SortDown: Header.SortIndicator.SortUp}.get(
                option.sortIndicator, option.sortIndicator)
            option = swapped
        super().drawPrimitive(element, option, painter, widget)


def use_desktop_sort_arrows(header: QtWidgets.QHeaderView) -> None:
    style = SortArrowStyle()
    style.setParent(header)  # lives as long as the header
    header.setStyle(style)
