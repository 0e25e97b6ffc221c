"""SpanRects: many axis-aligned rectangles in one pyqtgraph item.

The schedule chart draws a bar per step (100,000 tasks give a few hundred
thousand) and a rectangle per SRAM allocation. One item holds them all as
numpy arrays; on paint it keeps the rectangles in view and merges, within
a group (same row or address range, same colour), those that fall within
half a pixel of each other, so a frame draws a few rectangles per pixel
column whatever the zoom.

Zoomed out, every rectangle is in view and merging them all costs more
than a frame may take, so the rectangles are also kept pre-merged at two
coarser resolutions (levels of detail); a frame merges the coarsest level
whose resolution is finer than its pixels. Merging twice at widths that
grow gives what merging once at the wider width gives, up to less than a
pixel of the later width.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

LOD_FRACTIONS = (1 / 20000, 1 / 2000)  # of the full width, per merged unit


def _merge(arrs, x_lo: float, x_hi: float, per_px: float):
    """Rectangles of `arrs` (sorted by group, then start) in [x_lo, x_hi], merged at `per_px`."""
    x0, x1, y0, y1, ci, group = arrs
    keep = (x1 >= x_lo) & (x0 <= x_hi)
    if not keep.any():
        return tuple(a[:0] for a in arrs)
    s = np.clip(x0[keep], x_lo - per_px, x_hi + per_px)
    e = np.clip(x1[keep], x_lo - per_px, x_hi + per_px)
    g = group[keep]
    # Offset each group far to the right so one running maximum serves
    # every group (the order is by group, then start).
    big = (x_hi - x_lo) * 4 + 4 * per_px + 1.0
    off = (g - g[0]) * big - x_lo
    so, eo = s + off, e + off
    run_end = np.maximum.accumulate(eo)
    new = np.empty(len(so), dtype=bool)
    new[0] = True
    new[1:] = so[1:] > run_end[:-1] + per_px / 2
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(so) - 1)
    gs = s[first]
    ge = np.maximum(run_end[last] - off[first], gs + per_px)  # at least a pixel wide
    return gs, ge, y0[keep][first], y1[keep][first], ci[keep][first], g[first]


class SpanRects(pg.GraphicsObject):
    def __init__(self, x0, x1, y0, y1, color_index, colors: list[str], outline: str | None = None,
                 group=None, pattern: QtCore.Qt.BrushStyle = QtCore.Qt.BrushStyle.SolidPattern):
        """`group`: rectangles that may merge share a group (default: same y range and colour);
        `pattern`: the brush's fill (the measured rows are hatched)."""
        super().__init__()
        x0, x1 = np.asarray(x0, float), np.asarray(x1, float)
        y0, y1 = np.asarray(y0, float), np.asarray(y1, float)
        ci = np.asarray(color_index, dtype=np.int64)
        if group is None:
            keys = np.stack([y0, y1, ci.astype(float)], axis=1)
            group = np.unique(keys, axis=0, return_inverse=True)[1] if len(x0) else np.zeros(0, int)
        group = np.asarray(group, dtype=np.int64).reshape(-1)
        order = np.lexsort((x0, group)) if len(x0) else np.zeros(0, int)
        base = tuple(a[order] for a in (x0, x1, y0, y1, ci, group))
        self._levels = [(0.0, base)]
        if len(x0):
            lo, hi = float(x0.min()), float(x1.max())
            self._bounds = QtCore.QRectF(lo, float(y0.min()), max(hi - lo, 1e-9),
                                         max(float(y1.max() - y0.min()), 1e-9))
            for fraction in LOD_FRACTIONS:
                per = (hi - lo) * fraction
                coarser = _merge(self._levels[-1][1], lo, hi, per)
                if len(coarser[0]) < 0.5 * len(self._levels[-1][1][0]):
                    self._levels.append((per, coarser))
        else:
            self._bounds = QtCore.QRectF()
        self._brushes = [QtGui.QBrush(QtGui.QColor(c), pattern) for c in colors]
        self._pens = [pg.mkPen(QtGui.QColor(c).darker(150), width=1, cosmetic=True) for c in colors]
        self._outline = pg.mkPen(outline, width=2, cosmetic=True) if outline else None
        self.rects_drawn = 0  # in the last paint, for tests and benchmarks

    def __len__(self) -> int:
        return len(self._levels[0][1][0])

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802
        return self._bounds

    def visible_rects(self, x_lo: float, x_hi: float, per_px: float):
        """Merged rectangles in [x_lo, x_hi]: (x0, x1, y0, y1, colour index) arrays."""
        arrs = next(a for per, a in reversed(self._levels) if per <= per_px)
        return _merge(arrs, x_lo, x_hi, per_px)[:5]

    def paint(self, painter: QtGui.QPainter, option, widget=None) -> None:
        vb = self.getViewBox()
        if vb is None or not len(self):
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
