"""Tooltips for things drawn inside a QGraphicsView (Gantt bars, sweep points) that stay up while the
pointer rests on them.

A tooltip shown from a mouse move alone is taken down again about a second later: Qt then sends the
view's viewport a ToolTip event, QGraphicsView passes it to the scene, and the scene, finding no item
with a tooltip of its own, hides whatever is shown. Answering that ToolTip event with our own text
(and consuming it) keeps the tip for as long as the pointer stays; mouse moves update it meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore, QtWidgets


class HoverTips(QtCore.QObject):
    """`text_at(scene_pos)` -> the tip for that point of `view`'s scene, or None for no tip."""

    def __init__(self, view: QtWidgets.QGraphicsView, text_at: Callable[[QtCore.QPointF], str | None]):
        super().__init__(view)
        self._view, self._text_at = view, text_at
        view.viewport().setMouseTracking(True)
        view.viewport().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt's name
        kind = event.type()
        if kind == QtCore.QEvent.Type.ToolTip:
            self._show(event.pos(), event.globalPos())
            return True  # the scene would hide it
        if kind == QtCore.QEvent.Type.MouseMove:
            self._show(event.position().toPoint(), event.globalPosition().toPoint())
        elif kind == QtCore.QEvent.Type.Leave:
            QtWidgets.QToolTip.hideText()
        return False

    def _show(self, pos: QtCore.QPoint, global_pos: QtCore.QPoint) -> None:
        text = self._text_at(self._view.mapToScene(pos))
        if text:
            QtWidgets.QToolTip.showText(global_pos, text, self._view.viewport())
        else:
            QtWidgets.QToolTip.hideText()
