"""GanttChart: engines as rows, tasks as bars (pyqtgraph), horizontal zoom/pan.

Bars of one row and colour are one graphics item holding numpy arrays. On
paint, only the bars in view are taken, and bars closer than a pixel are
merged, so a frame draws at most a few rectangles per pixel column however
many tasks there are (20,000 bars pan smoothly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

BAR_HEIGHT = 0.7
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")


@dataclass(frozen=True)
class GanttTask:
    id: str
    row: str
    start: float
    end: float
    label: str = ""
    color: str | None = None


class _BarsItem(pg.GraphicsObject):
    """All bars of one row in one colour."""

    def __init__(self, y: float, starts: np.ndarray, ends: np.ndarray, color: str):
        super().__init__()
        order = np.argsort(starts, kind="stable")
        self._starts = starts[order]
        self._ends = ends[order]
        self._max_len = float((self._ends - self._starts).max()) if len(starts) else 0.0
        self._y = y
        self._brush = QtGui.QBrush(QtGui.QColor(color))
        self._pen = pg.mkPen(QtGui.QColor(color).darker(140), width=1, cosmetic=True)
        lo = float(self._starts.min()) if len(starts) else 0.0
        hi = float(self._ends.max()) if len(starts) else 0.0
        self._bounds = QtCore.QRectF(lo, y - BAR_HEIGHT / 2, max(hi - lo, 1e-9), BAR_HEIGHT)
        self.rects_drawn = 0  # in the last paint, for tests and benchmarks

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802
        return self._bounds

    def paint(self, painter: QtGui.QPainter, option, widget=None) -> None:
        vb = self.getViewBox()
        if vb is None or not len(self._starts):
            return
        (x0, x1), _ = vb.viewRange()
        px = max(vb.width(), 1.0)
        per_px = (x1 - x0) / px
        # Bars that can overlap [x0, x1]: start <= x1 and end >= x0.
        lo = int(np.searchsorted(self._starts, x0 - self._max_len, side="left"))
        hi = int(np.searchsorted(self._starts, x1, side="right"))
        s, e = self._starts[lo:hi], self._ends[lo:hi]
        keep = e >= x0
        s, e = np.clip(s[keep], x0 - per_px, x1 + per_px), np.clip(e[keep], x0 - per_px, x1 + per_px)
        if not len(s):
            self.rects_drawn = 0
            return
        # Merge bars that touch at pixel resolution (gap under half a pixel).
        run_end = np.maximum.accumulate(e)
        new = np.empty(len(s), dtype=bool)
        new[0] = True
        new[1:] = s[1:] > run_end[:-1] + per_px / 2
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, len(s) - 1)
        gs, ge = s[first], run_end[last]
        ge = np.maximum(ge, gs + per_px)  # at least a pixel wide
        top, h = self._y - BAR_HEIGHT / 2, BAR_HEIGHT
        rects = [QtCore.QRectF(a, top, b - a, h) for a, b in zip(gs.tolist(), ge.tolist())]
        painter.setBrush(self._brush)
        painter.setPen(self._pen if len(rects) < 2000 else QtCore.Qt.PenStyle.NoPen)
        painter.drawRects(rects)
        self.rects_drawn = len(rects)


class GanttChart(QtWidgets.QWidget):
    """Rows of bars; hover shows a task's label, click emits its id."""

    sig_task_clicked = QtCore.Signal(str)  # task id

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Gantt chart")
        self.plot = pg.PlotWidget(self, background=self.palette().color(QtGui.QPalette.ColorRole.Base))
        self.plot.setAccessibleName("Gantt chart plot")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self._vb = self.plot.getPlotItem().getViewBox()
        self._vb.setMouseEnabled(x=True, y=False)
        self._vb.invertY(True)
        self._vb.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self._tasks: list[GanttTask] = []
        self._rows: list[str] = []
        self._items: list[_BarsItem] = []
        # Per row: starts (sorted), ends, task indices, for hit tests.
        self._index: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, float]] = {}
        self._unit = "cycles"
        scene = self.plot.scene()
        # Not scene.sigMouseMoved: pyqtgraph rate-limits it and can drop the
        # last move, leaving a stale tooltip.
        self.plot.viewport().setMouseTracking(True)
        self.plot.viewport().installEventFilter(self)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)

    # -- public API -------------------------------------------------------

    def set_tasks(
        self, tasks: list[GanttTask], unit: str = "cycles", rows: list[str] | None = None
    ) -> None:
        """Show `tasks`; rows in the order given by `rows`, else of first use."""
        for item in self._items:
            self.plot.removeItem(item)
        self._items = []
        self._tasks = list(tasks)
        self._unit = unit
        order = list(rows) if rows is not None else []
        for t in self._tasks:
            if t.row not in order:
                order.append(t.row)
        self._rows = order
        row_of = {r: i for i, r in enumerate(order)}
        n = len(self._tasks)
        starts = np.fromiter((t.start for t in self._tasks), float, n)
        ends = np.fromiter((t.end for t in self._tasks), float, n)
        row_idx = np.fromiter((row_of[t.row] for t in self._tasks), int, n)
        colors = [t.color or _PALETTE[row_of[t.row] % len(_PALETTE)] for t in self._tasks]
        self._index = {}
        for r in range(len(order)):
            sel = np.flatnonzero(row_idx == r)
            by_start = sel[np.argsort(starts[sel], kind="stable")]
            max_len = float((ends[sel] - starts[sel]).max()) if len(sel) else 0.0
            self._index[r] = (starts[by_start], ends[by_start], by_start, max_len)
            for color in sorted({colors[i] for i in sel}):
                pick = np.array([i for i in sel if colors[i] == color], dtype=int)
                item = _BarsItem(r, starts[pick], ends[pick], color)
                self.plot.addItem(item)
                self._items.append(item)
        axis = self.plot.getAxis("left")
        axis.setTicks([[(i, name) for i, name in enumerate(order)]])
        self.plot.setLabel("bottom", unit)
        lo = float(starts.min()) if n else 0.0
        hi = float(ends.max()) if n else 1.0
        span = max(hi - lo, 1e-9)
        self._vb.setLimits(
            xMin=lo - 0.05 * span, xMax=hi + 0.05 * span, minXRange=span * 1e-6,
            yMin=-0.5, yMax=max(len(order), 1) - 0.5,
        )
        self._vb.setYRange(-0.5, max(len(order), 1) - 0.5, padding=0)
        self._vb.setXRange(lo, hi, padding=0.02)

    def tasks(self) -> list[GanttTask]:
        return list(self._tasks)

    def rows(self) -> list[str]:
        return list(self._rows)

    def unit(self) -> str:
        return self._unit

    def zoom_to(self, start: float, end: float) -> None:
        self._vb.setXRange(start, end, padding=0)

    def x_range(self) -> tuple[float, float]:
        (x0, x1), _ = self._vb.viewRange()
        return x0, x1

    def y_range(self) -> tuple[float, float]:
        _, (y0, y1) = self._vb.viewRange()
        return y0, y1

    def task_at(self, x: float, y: float, slack: float = 0.0) -> GanttTask | None:
        """The task under data point (x, y); `slack` widens bars (data units)."""
        r = int(round(y))
        if r not in self._index or abs(y - r) > BAR_HEIGHT / 2:
            return None
        starts, ends, idx, max_len = self._index[r]
        lo = int(np.searchsorted(starts, x - slack - max_len, side="left"))
        hi = int(np.searchsorted(starts, x + slack, side="right"))
        hits = [i for i in range(lo, hi) if starts[i] - slack <= x <= ends[i] + slack]
        if not hits:
            return None
        # The shortest bar wins (most specific), then the latest start.
        best = min(hits, key=lambda i: (ends[i] - starts[i], -starts[i]))
        return self._tasks[int(idx[best])]

    def tooltip_text(self, task: GanttTask) -> str:
        head = task.label or task.id
        return (
            f"{head}\n{task.row}: {task.start:g} – {task.end:g} {self._unit} "
            f"({task.end - task.start:g} {self._unit})"
        )

    # -- internals --------------------------------------------------------

    def _task_at_scene(self, scene_pos: QtCore.QPointF) -> GanttTask | None:
        if not self._vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self._vb.mapSceneToView(scene_pos)
        (x0, x1), _ = self._vb.viewRange()
        slack = 2 * (x1 - x0) / max(self._vb.width(), 1.0)  # two pixels
        return self.task_at(p.x(), p.y(), slack)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802
        if obj is self.plot.viewport():
            if event.type() == QtCore.QEvent.Type.MouseMove:
                self._on_mouse_moved(self.plot.mapToScene(event.position().toPoint()))
            elif event.type() == QtCore.QEvent.Type.Leave:
                self.plot.setToolTip("")
        return super().eventFilter(obj, event)

    def _on_mouse_moved(self, scene_pos: QtCore.QPointF) -> None:
        task = self._task_at_scene(scene_pos)
        if task is None:
            self.plot.setToolTip("")
            QtWidgets.QToolTip.hideText()
            return
        text = self.tooltip_text(task)
        self.plot.setToolTip(text)
        view_pos = self.plot.mapFromScene(scene_pos)
        QtWidgets.QToolTip.showText(self.plot.mapToGlobal(view_pos), text, self.plot)

    @QtCore.Slot(object)
    def _on_mouse_clicked(self, event) -> None:
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        task = self._task_at_scene(event.scenePos())
        if task is not None:
            self.sig_task_clicked.emit(task.id)
