"""ParetoView: a sweep's points as a scatter, its Pareto front and knee, and sensitivity.

Two metric boxes pick the axes (time against energy by default); every
feasible point that meets the constraints is a grey dot, the front is a
line of blue dots, the knee a red ring. Hovering a dot shows its
parameters and metrics; clicking one emits `sig_point_clicked(row)`.
The sensitivity tab plots one metric against one parameter, the others
held at the base target's values. PNG and CSV export. All numbers come
from core/sweep/analysis.py; this widget only draws.
"""

from __future__ import annotations

import csv

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from ...core.sweep.analysis import front, knee, sensitivity
from ...core.sweep.evaluate import METRIC_NAMES

AXES = ("time_us", "cycles", "energy_pj", "edp_pj_us", "area_mm2", "sram_kib", "dram_bytes")
ALL_BRUSH, FRONT_BRUSH = pg.mkBrush(150, 150, 150, 160), pg.mkBrush(30, 100, 220, 230)
KNEE_PEN = pg.mkPen(220, 40, 40, width=2)


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
        self.scatter = pg.ScatterPlotItem(size=7, pen=None, brush=ALL_BRUSH, hoverable=True,
                                          tip=self._tip)
        self.front_curve = pg.PlotDataItem(pen=pg.mkPen(30, 100, 220, width=1), symbol="o",
                                           symbolSize=9, symbolBrush=FRONT_BRUSH, symbolPen=None)
        self.knee_item = pg.ScatterPlotItem(size=16, pen=KNEE_PEN, brush=None)
        for item in (self.front_curve, self.scatter, self.knee_item):
            self.plot.addItem(item)
        self.scatter.sigClicked.connect(self._on_clicked)
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
        for box, items in ((self.model_box, dict.fromkeys(r["model"] for r in rows)),
                           (self.sens_param, params)):
            box.blockSignals(True)
            box.clear()
            box.addItems(list(items))
            box.blockSignals(False)
        self.redraw()
        self.redraw_sensitivity()

    def redraw(self) -> None:
        x, y, model = self.x_box.currentText(), self.y_box.currentText(), self.model_box.currentText()
        mine = [r for r in self.rows if r["model"] == model]
        self.shown = [r for r in mine if r["status"] == "ok" and r.get("meets_constraints", True)
                      and r.get(x) is not None and r.get(y) is not None]
        xs = np.fromiter((r[x] for r in self.shown), float, len(self.shown))
        ys = np.fromiter((r[y] for r in self.shown), float, len(self.shown))
        self.scatter.setData(x=xs, y=ys, data=np.arange(len(self.shown)))
        self.front_rows = front(self.shown, (x, y)) if x != y else []
        self.front_curve.setData([r[x] for r in self.front_rows], [r[y] for r in self.front_rows])
        self.knee_row = knee(self.front_rows, x, y) if self.front_rows else None
        self.knee_item.setData([self.knee_row[x]] if self.knee_row else [],
                               [self.knee_row[y]] if self.knee_row else [])
        self.plot.setLabel("bottom", x)
        self.plot.setLabel("left", y)
        off = len(mine) - len(self.shown)
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
    def _tip(self, x, y, data) -> str:
        return tip_text(self.shown[int(data)], self.params)

    def _on_clicked(self, item, points, ev) -> None:
        if len(points):
            self.sig_point_clicked.emit(self.shown[int(points[0].data())])

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
