"""Sort arrows: up for ascending, down for descending, as most desktops draw them."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.ui.sort_arrows import SortArrowStyle

Header = QtWidgets.QStyleOptionHeader


def draw(style, indicator) -> QtGui.QImage:
    image = QtGui.QImage(24, 24, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtGui.QColor("white"))
    option = Header()
    option.rect = QtCore.QRect(0, 0, 24, 24)
    option.palette = QtWidgets.QApplication.palette()
    option.sortIndicator = indicator
    painter = QtGui.QPainter(image)
    style.drawPrimitive(QtWidgets.QStyle.PrimitiveElement.PE_IndicatorHeaderArrow, option, painter)
    painter.end()
    return image


def ink_rows(image: QtGui.QImage) -> list[int]:
    """How many dark pixels each row has: a triangle pointing up widens downwards."""
    return [sum(QtGui.QColor(image.pixel(x, y)).lightness() < 200 for x in range(image.width()))
            for y in range(image.height())]


def test_the_arrows_are_swapped_against_qts_own(qapp):
    base = QtWidgets.QApplication.style()
    ours = SortArrowStyle()
    up, down = Header.SortIndicator.SortUp, Header.SortIndicator.SortDown
    assert draw(ours, up) == draw(base, down) and draw(ours, down) == draw(base, up)
    # Qt's SortDown (what a header shows for AscendingOrder) points down; ours then points up.
    rows = [n for n in ink_rows(draw(ours, down)) if n]
    assert rows and rows[0] <= rows[-1]  # narrow at the top: pointing up


def test_a_table_header_uses_them(qtbot):
    from npu_studio.ui.schedule.summary import ScheduleSummary

    summary = ScheduleSummary()
    qtbot.addWidget(summary)
    assert isinstance(summary.table.horizontalHeader().style(), SortArrowStyle)
    assert summary.table.horizontalHeader().sortIndicatorOrder() == QtCore.Qt.SortOrder.AscendingOrder
