"""Compiler diagnostics; `file:line:col` references are links that jump there."""

from __future__ import annotations

import html
import re

from PySide6 import QtCore, QtWidgets

_LOCATION = re.compile(r"((?:/|\w:)?[^\s:\"']+\.(?:mlir|mlirbc|onnx)):(\d+):(\d+)")


class LogPanel(QtWidgets.QTextBrowser):
    sig_location_clicked = QtCore.Signal(str, int, int)  # path, line, column

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setAccessibleName("Log")
        self.anchorClicked.connect(self._on_anchor)

    def append_text(self, text: str, *, error: bool = False) -> None:
        for line in text.splitlines() or [""]:
            escaped = html.escape(line)
            escaped = _LOCATION.sub(
                lambda m: f'<a href="loc:{html.escape(m.group(1))}:{m.group(2)}:{m.group(3)}">{m.group(0)}</a>',
                escaped,
            )
            color = "#b00020" if error or "error:" in line else None
            style = f' style="color:{color}"' if color else ""
            self.append(f"<span{style}><pre style='margin:0'>{escaped}</pre></span>")

    def _on_anchor(self, url: QtCore.QUrl) -> None:
        text = url.toString()
        if not text.startswith("loc:"):
            return
        path, line, col = text[4:].rsplit(":", 2)
        self.sig_location_clicked.emit(path, int(line), int(col))
