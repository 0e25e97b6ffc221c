"""A banner that stays one line: the text is elided to the width, the whole text is its tooltip.

Used where a message sits above a chart or table (the schedule's stale and verdict banners):
however long the message, it never takes the rows below it. The window's own error banner
(`error_banner`) wraps instead: it names a file and a reason the user has to read whole.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets


class OneLineBanner(QtWidgets.QLabel):
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self.setWordWrap(False)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)

    def set_message(self, lines: str | list[str]) -> None:
        """Show `lines` joined on one line (elided); the tooltip has them one per line."""
        lines = [lines] if isinstance(lines, str) else list(lines)
        self._full = "\n".join(lines)
        self.setToolTip(self._full)
        self._elide()

    def full_text(self) -> str:
        return self._full

    def _elide(self) -> None:
        one_line = " · ".join(line.strip() for line in self._full.splitlines() if line.strip())
        margins = self.contentsMargins()
        room = max(self.width() - margins.left() - margins.right() - 8, 20)
        super().setText(QtGui.QFontMetrics(self.font()).elidedText(one_line, QtCore.Qt.TextElideMode.ElideRight,
                                                                   room))

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802
        return QtCore.QSize(200, self.fontMetrics().height() + 8)


def error_banner() -> QtWidgets.QLabel:
    """The window's error banner: red, wrapped, selectable, hidden until a problem is raised."""
    banner = QtWidgets.QLabel()
    banner.setWordWrap(True)
    banner.setStyleSheet("background:#fde7e9;color:#8a0010;padding:6px;border:1px solid #e8a0a8")
    banner.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
                                   | QtCore.Qt.TextInteractionFlag.LinksAccessibleByMouse)
    banner.hide()
    return banner
