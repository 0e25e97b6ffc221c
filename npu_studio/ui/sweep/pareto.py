"""ParetoView: a sweep's points as a scatter, its Pareto front and knee, and sensitivity.

Two metric boxes pick the axes (time against energy by default); every
feasible point that meets the constraints is a grey dot, the front is a
line of blue dots, the knee a red ring. Hovering near a dot shows its
parameters and metrics; clicking one emits `sig_point_clicked(row)`.
The sensitivity tab plots one metric against one parameter, the others
held at the base target's values. Each axis has a log toggle, on by default
for sizes, bandwidths and energies spanning over a decade. PNG and CSV export. All numbers come
from core/sweep/analysis.py; this widget only draws.
"""

from __future__ import annotations

import csv
import math
from collections import Counter

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from ...core.sweep.analysis import knee, pareto_mask, sensitivity
from ...core.sweep.evaluate import METRIC_NAMES
from ..hover_tips import HoverTips
from ..plot_theme import GRID_ALPHA, plot_widget

AXES = ("time_us", "cycles", "energy_pj", "edp_pj_us", "area_mm2", "sram_kib", "dram_bytes")
DOT_PEN = pg.mkPen(140, 140, 140, width=5, cap=QtCore.Qt.PenCapStyle.RoundCap)
DENSE_PEN = pg.mkPen(140, 140, 140, width=2)  # above DENSE points: they overlap anyway, and draw
DENSE = 20_000  # 100,000 of them in about a third of the time of round 5-pixel dots
FRONT_BRUSH = pg.mkBrush(30, 100, 220, 230)
PICK_PIXELS = 8
KNEE_PEN = pg.mkPen(220, 40, 40, width=2)
# axes (metrics, parameters) that are log-scaled by default when they span over a decade
LOG_WORDS = ("sram", "dram", "bytes", "bandwidth", "energy", "_pj")


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


def log_default(name: str, values: np.ndarray) -> bool:
    """Log scale by default for sizes, bandwidths and energies whose positive values span
    more than a decade (a log2 sweep of SRAM is then evenly spaced)."""
    if not any(word in name for word in LOG_WORDS):
        return False
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return bool(len(values)) and values.max() > 10 * values.min()


def _set_quietly(check: QtWidgets.QCheckBox, on: bool) -> None:
    check.blockSignals(True)
    check.setChecked(bool(on))
    check.blockSignals(False)


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
        self.log_x, self.log_y = QtWidgets.QCheckBox("log", self), QtWidgets.QCheckBox("log", self)
        for label, box in (("Model", self.model_box), ("x", self.x_box), (None, self.log_x),
                           ("y", self.y_box), (None, self.log_y)):
            if label:
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
        self.plot = plot_widget(self)
        self.plot.showGrid(x=True, y=True, alpha=GRID_ALPHA)
        self.scatter = DotsItem()
        self._xs = self._ys = np.zeros(0)
        self.front_curve = pg.PlotDataItem(pen=pg.mkPen(30, 100, 220, width=1), symbol="o",
                                           symbolSize=9, symbolBrush=FRONT_BRUSH, symbolPen=None)
        self.knee_item = pg.ScatterPlotItem(size=16, pen=KNEE_PEN, brush=None)
        for item in (self.scatter, self.front_curve, self.knee_item):
            self.plot.addItem(item)
        self._tips = HoverTips(self.plot, self._tip_at)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        # sensitivity: one metric against one parameter, the others held at the base
        self.sens_param, self.sens_metric = QtWidgets.QComboBox(self), QtWidgets.QComboBox(self)
        self.sens_metric.addItems(AXES)
        self.sens_plot = plot_widget(self)
        self.sens_plot.showGrid(x=True, y=True, alpha=GRID_ALPHA)
        sens = QtWidgets.QWidget(self)
        sl = QtWidgets.QVBoxLayout(sens)
        sb = QtWidgets.QHBoxLayout()
        self.sens_log_x = QtWidgets.QCheckBox("log", self)
        self.sens_log_y = QtWidgets.QCheckBox("log", self)
        for label, box in (("Parameter", self.sens_param), (None, self.sens_log_x),
                           ("Metric", self.sens_metric), (None, self.sens_log_y)):
            if label:
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
        # a new axis takes its default scale (log_default); the boxes then follow the user
        for box in (self.model_box, self.x_box, self.y_box):
            box.currentIndexChanged.connect(self._axes_changed)
        for box in (self.sens_param, self.sens_metric):
            box.currentIndexChanged.connect(self._sens_axes_changed)
        for check in (self.log_x, self.log_y):
            check.toggled.connect(self.redraw)
        for check in (self.sens_log_x, self.sens_log_y):
            check.toggled.connect(self.redraw_sensitivity)

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
        self._axes_changed()
        self._sens_axes_changed()

    def _axes_changed(self) -> None:
        model = self.model_box.currentText()
        for check, box in ((self.log_x, self.x_box), (self.log_y, self.y_box)):
            _set_quietly(check, log_default(box.currentText(), self._column(model, box.currentText())))
        self.redraw()

    def _sens_axes_changed(self) -> None:
        p, m = self.sens_param.currentText(), self.sens_metric.currentText()
        values = [r.get(p) for r in self.rows]
        numeric = bool(values) and all(isinstance(v, (int, float)) for v in values)
        self.sens_log_x.setEnabled(numeric)
        _set_quietly(self.sens_log_x, numeric and log_default(p, np.asarray(values, float)))
        _set_quietly(self.sens_log_y, log_default(m, self._column(self.model_box.currentText(), m)))
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
        log_x, log_y = self.log_x.isChecked(), self.log_y.isChecked()
        drawable = np.isfinite(xs) & np.isfinite(ys)
        if log_x:  # a log axis cannot show zero or less
            drawable &= xs > 0
        if log_y:
            drawable &= ys > 0
        keep = np.flatnonzero(drawable)
        self.shown = [feasible[i] for i in keep.tolist()]
        xs, ys = xs[keep], ys[keep]
        on_front = np.flatnonzero(pareto_mask(np.column_stack([xs, ys]))) if x != y and len(xs) \
            else np.zeros(0, dtype=int)
        on_front = on_front[np.lexsort((ys[on_front], xs[on_front]))]
        # drawn in view coordinates: log10 of the values on a log axis (the axis labels 10^k)
        self._xs = np.log10(xs) if log_x else xs
        self._ys = np.log10(ys) if log_y else ys
        self.scatter.set_points(self._xs, self._ys)
        self.front_rows = [self.shown[i] for i in on_front.tolist()]
        self.front_curve.setData(self._xs[on_front], self._ys[on_front])
        self.knee_row = knee(self.front_rows, x, y) if self.front_rows else None
        kx, ky = self._view_xy(self.knee_row) if self.knee_row else (None, None)
        self.knee_item.setData([kx] if self.knee_row else [], [ky] if self.knee_row else [])
        plot = self.plot.getPlotItem()
        plot.getAxis("bottom").setLogMode(log_x)
        plot.getAxis("left").setLogMode(log_y)
        self.plot.setLabel("bottom", x)
        self.plot.setLabel("left", y)
        plot.getViewBox().enableAutoRange()
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
        self.sens_plot.setLogMode(x=numeric and self.sens_log_x.isChecked(),
                                  y=self.sens_log_y.isChecked())
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

    def _tip_at(self, scene_pos: QtCore.QPointF) -> str | None:
        row = self.row_at(scene_pos)
        return None if row is None else tip_text(row, self.params)

    def _on_mouse_clicked(self, ev) -> None:
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        row = self.row_at(ev.scenePos())
        if row is not None:
            self.sig_point_clicked.emit(row)

    def _view_xy(self, row: dict) -> tuple[float, float]:
        x, y = row[self.x_box.currentText()], row[self.y_box.currentText()]
        return (math.log10(x) if self.log_x.isChecked() else x,
                math.log10(y) if self.log_y.isChecked() else y)

    def point_position(self, row: dict) -> QtCore.QPoint:
        """Where `row`'s dot is, in the plot widget's coordinates (tests click there)."""
        vb = self.plot.getPlotItem().getViewBox()
        scene = vb.mapViewToScene(QtCore.QPointF(*self._view_xy(row)))
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
