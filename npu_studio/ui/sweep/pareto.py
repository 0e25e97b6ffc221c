"""ParetoView: a sweep's points as a scatter, its Pareto front and knee, and sensitivity.

Two metric boxes pick the axes (time against energy by default); every
feasible point that meets the constraints is a grey dot, the front is a
line of blue dots, the knee a red ring. Hovering near a dot shows its
parameters and metrics; clicking one emits `sig_point_clicked(row)`.
The sensitivity tab plots one metric against one parameter, the others
held at the base target's values. PNG and CSV export. All numbers come
from core/sweep/analysis.py; this widget only draws.
"""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from ...core.sweep.analysis import knee, pareto_mask, sensitivity
from ...core.sweep.evaluate import METRIC_NAMES

AXES = ("time_us", "cycles", "energy_pj", "edp_pj_us", "area_mm2", "sram_kib", "dram_bytes")
DOT_PEN = pg.mkPen(140, 140, 140, width=5, cap=QtCore.Qt.PenCapStyle.RoundCap)
DENSE_PEN = pg.mkPen(140, 140, 140, width=2)  # above DENSE points: they overlap anyway, and draw
DENSE = 20_000  # 100,000 of them in about a third of the time of round 5-pixel dots
FRONT_BRUSH = pg.mkBrush(30, 100, 220, 230)
PICK_PIXELS = 8
KNEE_PEN = pg.mkPen(220, 40, 40, width=2)


class DotsItem(pg.GraphicsObject):
    """Points drawn by one QPainter.drawPoints with a round pen: fast for 100,000 points, where a
    ScatterPlotItem builds a spot object per point (0.3 s at that size)."""

    def __init__(self):
        super().__init__()
        self._pen = DOT_PEN
        self._points = QtGui.QPolygonF()
        self._bounds = QtCore.QRectF()

    def set_points(self, xs: np.ndarray, ys: np.ndarray) -> None:
        self.prepareGeometryChange()
        self._pen = DENSE_PEN if len(xs) > DENSE else DOT_PEN
        self._points = pg.functions.create_qpolygonf(len(xs))
        if len(xs):
            view = pg.functions.ndarray_from_qpolygonf(self._points)
            view[:, 0], view[:, 1] = xs, ys
            self._bounds = QtCore.QRectF(xs.min(), ys.min(), xs.max() - xs.min(), ys.max() - ys.min())
        else:
            self._bounds = QtCore.QRectF()
        self.update()

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def dataBounds(self, axis: int, frac: float = 1.0, orthoRange=None):
        r = self._bounds
        return (r.left(), r.right()) if axis == 0 else (r.top(), r.bottom())

    def paint(self, painter, *args) -> None:
        painter.setPen(self._pen)
        painter.drawPoints(self._points)


def tip_text(row: dict, params: list[str]) -> str:
    lines = [f"{row['model']} point {row['point']}"]
    lines += [f"{p} = {row[p]}" for p in params]
    lines += [f"{m} = {row[m]:,.6g}" for m in METRIC_NAMES if isinstance(row.get(m), (int, float))]
    return "\n".join(lines)


class ParetoView(QtWidgets.QWidget):
    sig_point_clicked = QtCore.Signal(object)  # the row (dict) of the clicked point

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.rows: list[dict] = []
        self.params: list[str] = []
        self.base: dict = {}
        self.shown: list[dict] = []  # the rows drawn, by scatter index
        self.front_rows: list[dict] = []
        self.knee_row: dict | None = None
        self._feasible: dict[str, list[dict]] = {}
        self._columns: dict[tuple[str, str], np.ndarray] = {}
        self._counts: Counter = Counter()
        bar = QtWidgets.QHBoxLayout()
        self.model_box = QtWidgets.QComboBox(self)
        self.x_box, self.y_box = QtWidgets.QComboBox(self), QtWidgets.QComboBox(self)
        for box, default in ((self.x_box, "time_us"), (self.y_box, "energy_pj")):
            box.addItems(AXES)
            box.setCurrentText(default)
        for label, box in (("Model", self.model_box), ("x", self.x_box), ("y", self.y_box)):
            bar.addWidget(QtWidgets.QLabel(label))
            bar.addWidget(box)
        self.png_button = QtWidgets.QPushButton("Export PNG…", self)
        self.csv_button = QtWidgets.QPushButton("Export CSV…", self)
        self.png_button.clicked.connect(lambda: self._ask("PNG image (*.png)", self.export_png))
        self.csv_button.clicked.connect(lambda: self._ask("CSV (*.csv)", self.export_csv))
        bar.addStretch(1)
        bar.addWidget(self.png_button)
        bar.addWidget(self.csv_button)
        self.status = QtWidgets.QLabel(self)
        self.plot = pg.PlotWidget(self)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.scatter = DotsItem()
        self._xs = self._ys = np.zeros(0)
        self.front_curve = pg.PlotDataItem(pen=pg.mkPen(30, 100, 220, width=1), symbol="o",
                                           symbolSize=9, symbolBrush=FRONT_BRUSH, symbolPen=None)
        self.knee_item = pg.ScatterPlotItem(size=16, pen=KNEE_PEN, brush=None)
        for item in (self.scatter, self.front_curve, self.knee_item):
            self.plot.addItem(item)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        # sensitivity: one metric against one parameter, the others held at the base
        self.sens_param, self.sens_metric = QtWidgets.QComboBox(self), QtWidgets.QComboBox(self)
        self.sens_metric.addItems(AXES)
        self.sens_plot = pg.PlotWidget(self)
        self.sens_plot.showGrid(x=True, y=True, alpha=0.3)
        sens = QtWidgets.QWidget(self)
        sl = QtWidgets.QVBoxLayout(sens)
        sb = QtWidgets.QHBoxLayout()
        for label, box in (("Parameter", self.sens_param), ("Metric", self.sens_metric)):
            sb.addWidget(QtWidgets.QLabel(label))
            sb.addWidget(box)
        sb.addStretch(1)
        sl.addLayout(sb)
        sl.addWidget(self.sens_plot, 1)
        self.tabs = QtWidgets.QTabWidget(self)
        self.tabs.addTab(self.plot, "Pareto front")
        self.tabs.addTab(sens, "Sensitivity")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(self.tabs, 1)
        for box in (self.model_box, self.x_box, self.y_box):
            box.currentIndexChanged.connect(self.redraw)
        for box in (self.sens_param, self.sens_metric):
            box.currentIndexChanged.connect(self.redraw_sensitivity)

    # -- data -------------------------------------------------------------------
    def set_rows(self, rows: list[dict], params: list[str], base: dict | None = None) -> None:
        self.rows, self.params, self.base = rows, params, base or {}
        self._feasible: dict[str, list[dict]] = {}
        for r in rows:
            if r["status"] == "ok" and r.get("meets_constraints", True):
                self._feasible.setdefault(r["model"], []).append(r)
        self._columns: dict[tuple[str, str], np.ndarray] = {}
        self._counts = Counter(r["model"] for r in rows)
        for box, items in ((self.model_box, dict.fromkeys(r["model"] for r in rows)),
                           (self.sens_param, params)):
            box.blockSignals(True)
            box.clear()
            box.addItems(list(items))
            box.blockSignals(False)
        self.redraw()
        self.redraw_sensitivity()

    def _column(self, model: str, metric: str) -> np.ndarray:
        """`metric` of the model's feasible rows (NaN where missing), cached per set_rows."""
        key = (model, metric)
        if key not in self._columns:
            rows = self._feasible.get(model, [])
            self._columns[key] = np.fromiter(
                (np.nan if r.get(metric) is None else r[metric] for r in rows), float, len(rows))
        return self._columns[key]

    def redraw(self) -> None:
        x, y, model = self.x_box.currentText(), self.y_box.currentText(), self.model_box.currentText()
        feasible = self._feasible.get(model, [])
        xs, ys = self._column(model, x), self._column(model, y)
        keep = np.flatnonzero(np.isfinite(xs) & np.isfinite(ys))
        self.shown = [feasible[i] for i in keep.tolist()]
        xs, ys = xs[keep], ys[keep]
        self._xs, self._ys = xs, ys
        self.scatter.set_points(xs, ys)
        on_front = np.flatnonzero(pareto_mask(np.column_stack([xs, ys]))) if x != y and len(xs) \
            else np.zeros(0, dtype=int)
        on_front = on_front[np.lexsort((ys[on_front], xs[on_front]))]
        self.front_rows = [self.shown[i] for i in on_front.tolist()]
        self.front_curve.setData(xs[on_front], ys[on_front])
        self.knee_row = knee(self.front_rows, x, y) if self.front_rows else None
        self.knee_item.setData([self.knee_row[x]] if self.knee_row else [],
                               [self.knee_row[y]] if self.knee_row else [])
        self.plot.setLabel("bottom", x)
        self.plot.setLabel("left", y)
        off = self._counts.get(model, 0) - len(self.shown)
        self.status.setText(f"{len(self.shown)} points, {len(self.front_rows)} on the front"
                            + (f", {off} infeasible or outside the constraints" if off else "")
                            + (f"; knee: point {self.knee_row['point']}" if self.knee_row else ""))

    def redraw_sensitivity(self) -> None:
        self.sens_plot.clear()
        p, m = self.sens_param.currentText(), self.sens_metric.currentText()
        if not p or not self.rows:
            return
        line = sensitivity(self.rows, self.params, self.base, m, self.model_box.currentText()).get(p, [])
        numeric = all(isinstance(v, (int, float)) for v, _ in line)
        xs = [v for v, _ in line] if numeric else list(range(len(line)))
        self.sens_plot.plot(xs, [v for _, v in line], symbol="o", pen=pg.mkPen(30, 100, 220))
        self.sens_plot.setLabel("bottom", p)
        self.sens_plot.setLabel("left", m)

    # -- hover, click -------------------------------------------------------------
    def row_at(self, scene_pos: QtCore.QPointF) -> dict | None:
        """The drawn point nearest `scene_pos`, if within PICK_PIXELS of it."""
        if not len(self._xs):
            return None
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            return None
        at = vb.mapSceneToView(scene_pos)
        px, py = vb.viewPixelSize()
        dist = np.hypot((self._xs - at.x()) / px, (self._ys - at.y()) / py)
        i = int(np.argmin(dist))
        return self.shown[i] if dist[i] <= PICK_PIXELS else None

    def _on_mouse_moved(self, scene_pos) -> None:
        row = self.row_at(scene_pos)
        if row is None:
            QtWidgets.QToolTip.hideText()
            return
        QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), tip_text(row, self.params), self.plot)

    def _on_mouse_clicked(self, ev) -> None:
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        row = self.row_at(ev.scenePos())
        if row is not None:
            self.sig_point_clicked.emit(row)

    def point_position(self, row: dict) -> QtCore.QPoint:
        """Where `row`'s dot is, in the plot widget's coordinates (tests click there)."""
        vb = self.plot.getPlotItem().getViewBox()
        scene = vb.mapViewToScene(QtCore.QPointF(row[self.x_box.currentText()],
                                                 row[self.y_box.currentText()]))
        return self.plot.mapFromScene(scene)

    # -- export -------------------------------------------------------------------
    def _ask(self, filt: str, write) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export", "", filt)
        if path:
            write(path)

    def export_png(self, path: str) -> bool:
        return self.plot.grab().save(path, "PNG")

    def export_csv(self, path: str) -> None:
        """The points drawn (x, y, on the front, the parameters)."""
        x, y = self.x_box.currentText(), self.y_box.currentText()
        on_front = {id(r) for r in self.front_rows}
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["model", "point", *self.params, x, y, "on_front"])
            for r in self.shown:
                w.writerow([r["model"], r["point"], *(r[p] for p in self.params), r[x], r[y],
                            id(r) in on_front])
