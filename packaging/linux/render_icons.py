"""Render the application icon's PNG sizes from its SVG with Qt's own SVG renderer.

    python packaging/linux/render_icons.py

Run after editing resources/icons/hicolor/scalable/apps/*.svg; the PNGs are
committed (the window, the wheel and the desktop install use them as they are).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui, QtSvg  # noqa: E402

from npu_studio.resources import ICON_PNG_SIZES, ICON_SVG, icon_png  # noqa: E402


def render(size: int, out: Path) -> None:
    image = QtGui.QImage(size, size, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(image)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    QtSvg.QSvgRenderer(str(ICON_SVG)).render(painter)
    painter.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out), "PNG"):
        raise SystemExit(f"{out}: cannot write")


def main() -> int:
    app = QtGui.QGuiApplication([])  # noqa: F841  (QImage text/SVG rendering needs one)
    for size in ICON_PNG_SIZES:
        render(size, icon_png(size))
        print(icon_png(size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
