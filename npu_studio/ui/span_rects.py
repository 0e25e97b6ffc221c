"""SpanRects: many axis-aligned rectangles in one pyqtgraph item.

The schedule chart draws a bar per step (100,000 tasks give a few hundred
thousand) and a rectangle per SRAM allocation. One item holds them all as
numpy arrays; on paint it keeps the rectangles in view and merges, within
a group (same row or address range, same colour), those that fall within
half a pixel of each other, so a frame draws a few rectangles per pixel
column whatever the zoom. `gantt.BarsItem` does the same for one row and
colour; this is its many-row form.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui


class SpanRects(pg.GraphicsObject):
    def __init__(self, x0, x1, y0, y1, color_index, colors: list[str], outline: str | None = None):
        super().__init__()
        x0, x1 = np.asarray(x0, float), np.asarray(x1, float)
        y0, y1 = np.asarray(y0, float), np.asarray(y1, float)
        ci = np.asarray(color_index, dtype=np.int64)
        # A group is one (y range, colour): merge only inside a group.
        keys = np.stack([y0, y1, ci.astype(float)], axis=1) if len(x0) else np.zeros((0, 3))
        _, group = np.unique(keys, axis=0, return_inverse=True) if len(x0) else (None, np.zeros(0, int))
        group = np.asarray(group).reshape(-1)
        order = np.lexsort((x0, group)) if len(x0) else np.zeros(0, int)
        self._x0, self._x1 = x0[order], x1[order]
        self._y0, self._y1 = y0[order], y1[order]
        self._ci, self._group = ci[order], group[order]
        self._brushes = [QtGui.QBrush(QtGui.QColor(c)) for c in colors]
        self._pens = [pg.mkPen(QtGui.QColor(c).darker(150), width=1, cosmetic=True) for c in colors]
        self._outline = pg.mkPen(outline, width=2, cosmetic=True) if outline else None
        if len(x0):
            lo, hi = float(x0.min()), float(x1.max())
            self._bounds = QtCore.QRectF(lo, float(y0.min()), max(hi - lo, 1e-9),
                                         max(float(y1.max() - y0.min()), 1e-9))
        else:
            self._bounds = QtCore.QRectF()
        self.rects_drawn = 0  # in the last paint, for tests and benchmarks

    def __len__(self) -> int:
        return len(self._x0)

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802
        return self._bounds

    def visible_rects(self, x_lo: float, x_hi: float, per_px: float):
        """Merged rectangles in [x_lo, x_hi]: (x0, x1, y0, y1, colour index) arrays."""
        keep = (self._x1 >= x_lo) & (self._x0 <= x_hi)
        if not keep.any():
            empty = np.zeros(0)
            return empty, empty, empty, empty, np.zeros(0, int)
        s = np.clip(self._x0[keep], x_lo - per_px, x_hi + per_px)
        e = np.clip(self._x1[keep], x_lo - per_px, x_hi + per_px)
        g = self._group[keep].astype(float)
        # Offset each group far to the right so one running maximum serves
        # every group (the sort is by group, then start).
        big = (x_hi - x_lo) * 4 + 4 * per_px + 1.0
        so, eo = s - x_lo + g * big, e - x_lo + g * big
        run_end = np.maximum.accumulate(eo)
        new = np.empty(len(so), dtype=bool)
        new[0] = True
        new[1:] = so[1:] > run_end[:-1] + per_px / 2
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, len(so) - 1)
        gs = s[first]
        ge = run_end[last] - g[first] * big + x_lo
        ge = np.maximum(ge, gs + per_px)  # at least a pixel wide
        y0, y1, ci = self._y0[keep][first], self._y1[keep][first], self._ci[keep][first]
        return gs, ge, y0, y1, ci

    def paint(self, painter: QtGui.QPainter, option, widget=None) -> None:
        vb = self.getViewBox()
        if vb is None or not len(self._x0):
            return
        (x_lo, x_hi), _ = vb.viewRange()
        per_px = (x_hi - x_lo) / max(vb.width(), 1.0)
        gs, ge, y0, y1, ci = self.visible_rects(x_lo, x_hi, per_px)
        self.rects_drawn = len(gs)
        if not len(gs):
            return
        many = len(gs) >= 3000
        for c in np.unique(ci).tolist():
            sel = np.flatnonzero(ci == c)
            rects = [QtCore.QRectF(a, b, w, h) for a, b, w, h in zip(
                gs[sel].tolist(), y0[sel].tolist(), (ge[sel] - gs[sel]).tolist(),
                (y1[sel] - y0[sel]).tolist())]
            painter.setBrush(self._brushes[c % len(self._brushes)])
            if self._outline is not None:
                painter.setPen(self._outline)
            else:
                painter.setPen(QtCore.Qt.PenStyle.NoPen if many else self._pens[c % len(self._pens)])
            painter.drawRects(rects)
