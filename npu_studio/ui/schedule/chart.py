"""ScheduleChart: the simulated NPU schedule as three linked plots.

Top: one row per engine (DMA channels, MAC array, vector unit, CPU), a bar
per step coloured by dispatch (the summary's # column is the legend). Middle: SRAM bytes in use over time,
scaled to the peak (the capacity as a dashed line when the peak comes near it; always in the title).
Bottom: SRAM addresses over time, a rectangle per allocation, scaled to the highest address used.
Each SRAM plot keeps a band at its top for its title, so the title never covers the data. The three
share one time axis (cycles or time, in engineering units).
Wheel and drag zoom and pan in time; +/-, arrows and Home do the same from
the keyboard. Hovering a bar shows the task; clicking selects it (arrows
to its dependencies and dependents). When the workspace holds measured cycles, each
engine they touch gets a second row, "<engine> measured", under its own: a lighter,
outlined bar per measured task (dispatch), tooltips with both counts. Everything drawn
comes from a `ScheduleModel`; the chart holds no other state.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from ...core.npu.report.schedule_model import ScheduleModel
from ...core.units import format_bytes
from ..hover_tips import HoverTips
from ..plot_theme import EngineeringAxis, layout_widget
from .metrics import ADDRESS_PX, SRAM_PX, TIME_AXIS_PX, chart_min_height, engines_height
from .measured_rows import measured_rects
from .span_rects import SpanRects
from .summary import PALETTE, dispatch_color

BAR_HALF = 0.35


def byte_tick(n: float) -> str:
    """An SRAM axis label in the capacity line's units: `0`, `512.0 KiB` -> `512 KiB`, `1.5 MiB`."""
    if n <= 0:
        return "0"
    text = format_bytes(n)
    return text.replace(".0 ", " ").replace(" bytes", " B")


class ByteAxis(pg.AxisItem):
    """Ticks at binary steps (..., 256 KiB, 512 KiB, 1 MiB, ...), labelled in B/KiB/MiB."""

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802 - pyqtgraph's name
        span = maxVal - minVal
        if span <= 0:
            return super().tickSpacing(minVal, maxVal, size)
        most = max(2, int(size / 24))  # at most a label per 24 px
        step = 2.0 ** np.ceil(np.log2(span / most))
        return [(step, 0)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        # No "0": the two SRAM plots are stacked, and a 0 at one's foot met the other's top label.
        return [byte_tick(v * scale) if v > 0 else "" for v in values]


def sram_top(used: float, capacity: float) -> tuple[float, bool]:
    """The top of an SRAM plot's scale: what is used, or the capacity once the use comes within half
    of it (True: the capacity line is in view). A small model's use fills the plot, not a sliver."""
    if capacity > 0 and used >= capacity / 2:
        return float(max(used, capacity)), True
    return float(max(used, 1)), False


HIGHLIGHT = "#ffd400"
CRITICAL = "#d00000"
CPU_ROW = "CPU measured"
TITLE_GAP_PX = 2  # between an SRAM plot's title band and its data
LEFT_AXIS_PX = 84


class ScheduleChart(QtWidgets.QWidget):
    sig_task_clicked = QtCore.Signal(int)  # task id

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("NPU schedule chart")
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        self.view = layout_widget(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.engines = self.view.addPlot(row=0, col=0)
        self.sram = self.view.addPlot(row=1, col=0, axisItems={"left": ByteAxis("left")})
        self.time_axis = EngineeringAxis("bottom")
        self.addresses = self.view.addPlot(row=2, col=0, axisItems={"left": ByteAxis("left"),
                                                                    "bottom": self.time_axis})
        self.view.ci.layout.setRowStretchFactor(0, 3)
        self.view.ci.layout.setRowStretchFactor(1, 1)
        self.view.ci.layout.setRowStretchFactor(2, 1)
        self.view.ci.layout.setSpacing(2)
        self.sram.setMinimumHeight(SRAM_PX)
        self.addresses.setMinimumHeight(ADDRESS_PX + TIME_AXIS_PX)
        for plot in (self.engines, self.sram, self.addresses):
            plot.getViewBox().setMouseEnabled(x=True, y=False)
            plot.getViewBox().setMenuEnabled(False)
            plot.hideButtons()
        self._set_row_labels([])
        # Axes (and grid lines, which the axes draw) cost more per frame than
        # the bars: one time axis, at the bottom, and no grid.
        self.engines.hideAxis("bottom")
        self.sram.hideAxis("bottom")
        self.sram.setClipToView(True)
        self.sram.setDownsampling(auto=True, mode="peak")
        self.sram.setXLink(self.engines)
        self.addresses.setXLink(self.engines)
        self.engines.getViewBox().invertY(True)
        # The axes are titled by the plots' tooltips and the summary: a rotated title beside
        # byte labels overlapped them.
        self.sram.getViewBox().setToolTip("SRAM used over time; the dashed line is the capacity")
        self.addresses.getViewBox().setToolTip("SRAM addresses over time: a rectangle per allocation")
        backdrop = pg.mkBrush(255, 255, 255, 200)  # readable over the bars it sits on
        self.sram_title = pg.TextItem("SRAM used", color="#555555", anchor=(0, 0), fill=backdrop)
        self.address_title = pg.TextItem("SRAM address", color="#555555", anchor=(0, 0), fill=backdrop)
        for plot, title in ((self.sram, self.sram_title), (self.addresses, self.address_title)):
            title.setParentItem(plot.getViewBox())
            title.setZValue(20)
            title.setPos(4, 0)
            plot.getViewBox().sigResized.connect(self._fit_sram_scales)
        self._sram_tops = (1.0, 1.0)  # the data's top in each SRAM plot, in bytes
        self._set_rows(7)
        self.model: ScheduleModel | None = None
        self.unit = "cycles"
        self.bars: SpanRects | None = None
        self.measured_bars: SpanRects | None = None  # the "measured" rows (workspace measurements)
        self.row_labels: list[str] = []
        self.sim_row = self.meas_row = np.zeros(0, dtype=np.int64)  # engine -> its rows (-1: no measured row)
        self.allocs: SpanRects | None = None
        self.cpu_bars: SpanRects | None = None
        self.cpu_track = None  # (starts, ends, dispatches) of the measured CPU row, in cycles
        self.highlight: SpanRects | None = None
        self.critical: SpanRects | None = None
        self.selected_task: int | None = None
        self.highlighted: list[int] = []
        self._arrows: list[QtWidgets.QGraphicsItem] = []
        self.view.viewport().setMouseTracking(True)
        self._tips = HoverTips(self.view, self._text_at_scene)
        self.view.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    # -- data -------------------------------------------------------------
    def set_model(self, model: ScheduleModel | None, unit: str | None = None) -> None:
        for plot in (self.engines, self.sram, self.addresses):
            plot.clear()
        self._arrows, self.highlight, self.critical = [], None, None
        self.selected_task, self.highlighted = None, []
        self.model = model
        self.cpu_bars = self.cpu_track = None  # cleared with the plot
        if unit:
            self.unit = unit
        if model is None:
            self.bars = self.allocs = self.measured_bars = None
            self.row_labels = []
            return
        colors = [dispatch_color(i) for i in range(len(PALETTE))]
        ci = model.bar_dispatch % len(PALETTE)
        self.row_labels, self.sim_row, self.meas_row = model.display_rows()
        rows = self.sim_row[model.bar_engine]
        self.bars = SpanRects(model.bar_start, model.bar_end, rows - BAR_HALF, rows + BAR_HALF, ci, colors,
                              group=rows * len(PALETTE) + ci)  # a row and a colour
        self.engines.addItem(self.bars)
        self.measured_bars = measured_rects(model, self.meas_row)
        if self.measured_bars is not None:
            self.engines.addItem(self.measured_bars)
        self._set_row_labels(self.row_labels)
        self._set_rows(len(self.row_labels))
        self._draw_sram(model)
        aci = model.alloc_dispatch % len(PALETTE)
        self.allocs = SpanRects(model.alloc_start, model.alloc_end, model.alloc_addr,
                                model.alloc_addr + model.alloc_size, aci, colors)
        self.addresses.addItem(self.allocs)
        self._draw_address_scale(model)
        n = len(self.row_labels)
        self.engines.getViewBox().setLimits(yMin=-0.6, yMax=max(n, 1) - 0.4)
        self.engines.setYRange(-0.6, max(n, 1) - 0.4, padding=0)
        self._apply_unit()
        self.fit()

    def set_cpu_track(self, starts: np.ndarray, ends: np.ndarray, dispatches: np.ndarray) -> None:
        """A row under the engines: the measured CPU time of each dispatch, from where it starts on the NPU."""
        if self.model is None:
            return
        if self.cpu_bars is not None:
            self.engines.removeItem(self.cpu_bars)
        n = len(self.row_labels)
        self.cpu_track = (starts, ends, dispatches)
        colors = [dispatch_color(i) for i in range(len(PALETTE))]
        ci = dispatches % len(PALETTE)
        self.cpu_bars = SpanRects(starts, ends, np.full(len(starts), n - BAR_HALF),
                                  np.full(len(starts), n + BAR_HALF), ci, colors, group=ci)
        self.engines.addItem(self.cpu_bars)
        self._set_rows(n + 1)  # a row's pitch for its label too: a squeezed label is left out
        self._set_row_labels([*self.row_labels, CPU_ROW])
        self.engines.getViewBox().setLimits(yMin=-0.6, yMax=n + 0.6)
        self.engines.setYRange(-0.6, n + 0.6, padding=0)

    def _draw_sram(self, model: ScheduleModel) -> None:
        t, b = model.sram_times, model.sram_bytes
        if len(t):
            # a step function: the level holds until the next change
            xs = np.repeat(t, 2)[1:]
            ys = np.repeat(b, 2)[:-1]
            self.sram.plot(xs, ys, pen=pg.mkPen("#4e79a7", width=1), fillLevel=0,
                           brush=pg.mkBrush(78, 121, 167, 60))
        peak, capacity = (int(b.max()) if len(b) else 0), model.sram_capacity
        top, capacity_in_view = sram_top(peak, capacity)
        if capacity_in_view:
            self.sram.addItem(pg.InfiniteLine(pos=capacity, angle=0,
                                              pen=pg.mkPen(CRITICAL, style=QtCore.Qt.PenStyle.DashLine)))
        self.sram_title.setText(f"SRAM used: peak {byte_tick(peak)} of {byte_tick(capacity)}"
                                + (" (dashed)" if capacity_in_view else ""))
        self.sram.getViewBox().setToolTip(f"SRAM used over time: peak {peak:,} B, capacity {capacity:,} B"
                                          + (" (the dashed line)" if capacity_in_view else ""))
        self._sram_tops = (top, self._sram_tops[1])

    def _draw_address_scale(self, model: ScheduleModel) -> None:
        highest = int((model.alloc_addr + model.alloc_size).max()) if len(model.alloc_addr) else 0
        capacity = model.sram_capacity
        top, capacity_in_view = sram_top(highest, capacity)
        self.address_title.setText(f"SRAM address: up to {byte_tick(highest)} of {byte_tick(capacity)}")
        self._sram_tops = (self._sram_tops[0], top)
        self._fit_sram_scales()

    def _fit_sram_scales(self, *_) -> None:
        """Each SRAM plot's scale, with its title's band above the data (at any plot height)."""
        for plot, title, top in ((self.sram, self.sram_title, self._sram_tops[0]),
                                 (self.addresses, self.address_title, self._sram_tops[1])):
            height = plot.getViewBox().height()
            free = max(height - title.boundingRect().height() - TITLE_GAP_PX, height * 0.4, 1.0)
            plot.setYRange(0, top * max(height, 1.0) / free, padding=0)

    def _set_row_labels(self, labels: list[str]) -> None:
        """The engine rows' names, in a left axis wide enough for the longest: pyqtgraph leaves out a
        label that does not fit. The SRAM plots' axes take the same width, so the time axes align."""
        axis = self.engines.getAxis("left")
        axis.setTicks([list(enumerate(labels))])
        metrics = QtGui.QFontMetrics(axis.style["tickFont"] or self.view.font())
        widest = max((metrics.horizontalAdvance(text) for text in [*labels, "1023 KiB"]), default=0)
        width = max(LEFT_AXIS_PX, widest + 16)  # the tick and the gap pyqtgraph puts before the text
        for plot in (self.engines, self.sram, self.addresses):
            plot.getAxis("left").setWidth(width)

    def _set_rows(self, n: int) -> None:
        """Engine rows at least ROW_PX apart: the chart asks for the height, the dock scrolls if short."""
        self.engines.setMinimumHeight(engines_height(n))
        self.setMinimumHeight(chart_min_height(n))

    def row_pixels(self) -> float:
        """Pixels between two engine rows as drawn now (the rows fill the engine plot)."""
        _, (y0, y1) = self.engines.getViewBox().viewRange()
        return self.engines.getViewBox().height() / max(y1 - y0, 1e-9)

    # -- units, range ------------------------------------------------------
    def set_unit(self, unit: str) -> None:
        self.unit = unit
        self._apply_unit()

    def _apply_unit(self) -> None:
        """The time axis in cycles (`200k`, `1.2M`) or in time (`500 µs`, `1.5 ms`)."""
        axis = self.time_axis
        if self.unit == "us" and self.model is not None:
            axis.unit = "s"
            axis.setScale(1e-6 / self.model.totals.clock_mhz)
            axis.setLabel("time")
        else:
            axis.unit = ""
            axis.setScale(1.0)
            axis.setLabel("cycles")
        axis.picture = None  # the labels change with the unit even where the scale does not
        axis.update()

    def fit(self) -> None:
        total = float(self.model.totals.cycles) if self.model else 1.0
        self.engines.getViewBox().setLimits(xMin=-0.05 * total, xMax=total * 1.05,
                                            minXRange=max(total * 1e-7, 1e-3))
        self.engines.setXRange(0, max(total, 1.0), padding=0.01)

    def x_range(self) -> tuple[float, float]:
        (x0, x1), _ = self.engines.getViewBox().viewRange()
        return x0, x1

    def zoom_to(self, start: float, end: float) -> None:
        pad = max((end - start) * 0.05, 1.0)
        self.engines.setXRange(start - pad, end + pad, padding=0)

    def zoom(self, factor: float) -> None:
        x0, x1 = self.x_range()
        mid, half = (x0 + x1) / 2, (x1 - x0) / 2 / factor
        self.engines.setXRange(mid - half, mid + half, padding=0)

    def pan(self, fraction: float) -> None:
        x0, x1 = self.x_range()
        d = (x1 - x0) * fraction
        self.engines.setXRange(x0 + d, x1 + d, padding=0)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        if key in (QtCore.Qt.Key.Key_Plus, QtCore.Qt.Key.Key_Equal):
            self.zoom(1.5)
        elif key == QtCore.Qt.Key.Key_Minus:
            self.zoom(1 / 1.5)
        elif key == QtCore.Qt.Key.Key_Left:
            self.pan(-0.2)
        elif key == QtCore.Qt.Key.Key_Right:
            self.pan(0.2)
        elif key == QtCore.Qt.Key.Key_Home:
            self.fit()
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    # -- hit tests ----------------------------------------------------------
    def task_at(self, x: float, y: float, slack: float = 0.0) -> int | None:
        """The task whose bar covers (x cycles, y row); the shortest wins."""
        m = self.model
        if m is None:
            return None
        row = int(round(y))
        if abs(y - row) > BAR_HALF or row not in self.sim_row:
            measured = self.measured_at(x, y, slack)
            if measured is None or m.measured.level != "task":
                return None
            return int(m.measured.id[measured])  # a measured task's bar selects the task
        engine = int(np.flatnonzero(self.sim_row == row)[0])
        hit = np.flatnonzero((m.bar_engine == engine) & (m.bar_start - slack <= x) & (m.bar_end + slack >= x))
        if not len(hit):
            return None
        best = hit[np.argmin(m.bar_end[hit] - m.bar_start[hit])]
        return int(m.bar_task[best])

    def measured_at(self, x: float, y: float, slack: float = 0.0) -> int | None:
        """The measured bar covering (x cycles, y row): its index in `model.measured`; the shortest wins."""
        m = self.model.measured if self.model is not None else None
        row = int(round(y))
        if m is None or abs(y - row) > BAR_HALF:
            return None
        hit = np.flatnonzero((self.meas_row[m.engine] == row) & (m.start - slack <= x) & (m.end + slack >= x))
        return int(hit[np.argmin(m.end[hit] - m.start[hit])]) if len(hit) else None

    def text_at(self, x: float, y: float, slack: float = 0.0) -> str | None:
        measured = self.measured_at(x, y, slack)
        if measured is not None:
            return self.model.measured_text(measured, self.unit)
        task = self.task_at(x, y, slack)
        return None if task is None else self.model.task_text(task, self.unit)

    def _task_at_scene(self, pos: QtCore.QPointF) -> int | None:
        vb = self.engines.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return None
        p = vb.mapSceneToView(pos)
        x0, x1 = self.x_range()
        return self.task_at(p.x(), p.y(), 2 * (x1 - x0) / max(vb.width(), 1.0))

    def _text_at_scene(self, pos: QtCore.QPointF) -> str | None:
        vb = self.engines.getViewBox()
        if self.model is None or not vb.sceneBoundingRect().contains(pos):
            return None
        p = vb.mapSceneToView(pos)
        x0, x1 = self.x_range()
        return self.text_at(p.x(), p.y(), 2 * (x1 - x0) / max(vb.width(), 1.0))

    @QtCore.Slot(object)
    def _on_mouse_clicked(self, event) -> None:
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        task = self._task_at_scene(event.scenePos())
        if task is not None:
            self.sig_task_clicked.emit(task)

    # -- selection, highlights ----------------------------------------------
    def _overlay(self, tasks: list[int], color: str) -> SpanRects | None:
        m = self.model
        if m is None or not tasks:
            return None
        sel = np.flatnonzero(np.isin(m.bar_task, np.asarray(tasks, dtype=int)))
        rows = self.sim_row[m.bar_engine[sel]]
        item = SpanRects(m.bar_start[sel], m.bar_end[sel], rows - BAR_HALF, rows + BAR_HALF,
                         np.zeros(len(sel), int), [color], outline="#000000")
        item.setZValue(5)
        self.engines.addItem(item)
        return item

    def highlight_tasks(self, tasks: list[int], zoom: bool = True) -> None:
        if self.highlight is not None:
            self.engines.removeItem(self.highlight)
        self.highlighted = list(tasks)
        self.highlight = self._overlay(self.highlighted, HIGHLIGHT)
        if zoom and tasks and self.model is not None:
            self.zoom_to(*self.model.span(self.highlighted))

    def show_critical_path(self, on: bool) -> None:
        if self.critical is not None:
            self.engines.removeItem(self.critical)
            self.critical = None
        if on and self.model is not None:
            self.critical = self._overlay(self.model.critical_path, CRITICAL)

    def select_task(self, task: int | None) -> None:
        """Outline `task` and draw arrows from its dependencies and to its dependents."""
        for item in self._arrows:
            self.engines.removeItem(item)
        self._arrows = []
        self.selected_task = task
        m = self.model
        if m is None or task is None:
            return
        own = self._overlay([task], HIGHLIGHT)
        if own is not None:
            self._arrows.append(own)
        row = self._main_row(task)
        for dep in m.deps_of(task)[:50]:
            self._arrow(float(m.task_end[dep]), self._main_row(dep), float(m.task_start[task]), row)
        for nxt in m.dependents_of(task)[:50]:
            self._arrow(float(m.task_end[task]), row, float(m.task_start[nxt]), self._main_row(nxt))

    def _main_row(self, task: int) -> float:
        m = self.model
        sel = np.flatnonzero(m.bar_task == task)
        if not len(sel):
            return 0.0
        longest = sel[np.argmax(m.bar_end[sel] - m.bar_start[sel])]
        return float(self.sim_row[m.bar_engine[longest]])

    def _arrow(self, x0: float, y0: float, x1: float, y1: float) -> None:
        line = pg.PlotCurveItem([x0, x1], [y0, y1], pen=pg.mkPen("#222222", width=1.5))
        line.setZValue(6)
        self.engines.addItem(line)
        angle = 180.0 if x1 >= x0 else 0.0
        head = pg.ArrowItem(pos=(x1, y1), angle=angle, headLen=10, brush="#222222", pen=None)
        head.setZValue(6)
        self.engines.addItem(head)
        self._arrows += [line, head]

    def grab_png(self, path: str) -> bool:
        return self.grab().save(path, "PNG")
