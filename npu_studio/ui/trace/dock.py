"""TraceDock: run the numerics trace, see each dispatch's error against the ONNX model.

The plot shows, in execution order, each paired dispatch's largest error
relative to its ONNX tensor's largest value (as log10), with the
tolerance as a line; departing dispatches are red, the first divergent one
is ringed; the selected dispatch's values are a histogram beside it. Clicking a
point selects its dispatch. Beside them, the selected dispatch's numbers: its ONNX tensor, errors, statistics, the first
differing elements. "Break after selected" shows instead the output of
IREE's own break after the selected dispatch (`core/debug/dispatch_break`):
the same numbers and histogram. The dock only shows; `TraceController` runs
the trace and the break.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.debug.trace_report import DispatchTrace, TraceReport

if TYPE_CHECKING:  # the break result's module loads IREE's bindings
    from ...core.debug.dispatch_break import BreakResult

OK_STYLE = "background:#d1e7dd;color:#0f5132;padding:3px;"
BAD_STYLE = "background:#f8d7da;color:#842029;padding:3px;"
FLOOR = 1e-12  # an exact match is drawn here on the log axis
PLOT_MIN_PX = 150  # the plots' height: "relative error" on the axis whole, and four decades of ticks


def error_label(d: DispatchTrace) -> str:
    """The table's error cell: relative error, marked when it departs; why not, when unpaired."""
    if not d.judged:
        return "unpaired"
    return f"{'DEPARTS ' if d.departs else ''}{d.max_rel_error:.2g}" + ("" if d.paired else " (vs compiler)")


def detail_lines(d: DispatchTrace) -> list[str]:
    if not d.judged:
        return [f"Dispatch #{d.index}: not paired with an ONNX tensor: {d.why_unpaired}"]
    head = (f"Dispatch #{d.index} against ONNX tensor {d.onnx_tensor!r} (node {d.onnx_node})" if d.paired else
            f"Dispatch #{d.index} against the compiler's own dispatch #{d.compiler_dispatch} on the same inputs "
            f"(no ONNX tensor: {d.why_unpaired})")
    lines = [head + (", compared on the interior of its padded result" if d.padded else ""),
             f"max abs error {d.max_abs_error:.4g}, relative {d.max_rel_error:.3g} "
             f"(largest |reference| {d.scale:.4g}, tolerance {d.tolerance:g}): "
             + ("DEPARTS" if d.departs else "agrees"),
             f"{d.outside} element(s) outside tolerance; result {'x'.join(map(str, d.shape))} {d.dtype}"]
    if d.stats:
        lines.append(f"IREE result: min {d.stats['min']:.4g}, max {d.stats['max']:.4g}, mean {d.stats['mean']:.4g}, "
                     f"std {d.stats.get('std', 0):.4g}, {d.stats.get('nonfinite', 0)} not finite")
    if d.inputs_agree is False:
        lines.append("its inputs already depart (the error was born earlier)")
    elif d.inputs_agree is None and d.producers:
        lines.append("some inputs come through unpaired dispatches")
    for e in d.first_differing:
        lines.append(f"  [{', '.join(map(str, e['index']))}] IREE {e['iree']:.6g}  ONNX {e['onnx']:.6g}")
    return lines


def _log_error(d: DispatchTrace) -> float:
    """The plotted value: log10 of the relative error (an exact match at FLOOR, infinity at 1e12)."""
    rel = d.max_rel_error if math.isfinite(d.max_rel_error) else 1e12
    return math.log10(max(rel, FLOOR))


class TraceDock(QtWidgets.QDockWidget):
    sig_trace_requested = QtCore.Signal()
    sig_break_requested = QtCore.Signal()
    sig_cancel_requested = QtCore.Signal()
    sig_dispatch_selected = QtCore.Signal(int)  # dispatch index

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("Numerics vs ONNX", parent)
        self.setObjectName("trace_dock")
        body = QtWidgets.QWidget(self)
        self.toolbar = QtWidgets.QToolBar(body)
        self.build_box = QtWidgets.QComboBox(body)
        self.build_box.setAccessibleName("Build to trace")
        self.build_box.setToolTip("The workspace's own build (main) or one of its built variants")
        self.build_box.addItem("main")
        self.toolbar.addWidget(self.build_box)
        self.trace_action = self.toolbar.addAction("Trace against ONNX", self.sig_trace_requested.emit)
        self.trace_action.setToolTip("Run the build dispatch by dispatch and onnxruntime with its intermediate "
                                     "tensors; name the first dispatch that departs")
        self.break_action = self.toolbar.addAction("Break after selected", self.sig_break_requested.emit)
        self.break_action.setToolTip("Rebuild with IREE's --iree-flow-break-dispatch after the selected dispatch "
                                     "(build variant break-N), run it, and show that dispatch's output against "
                                     "onnxruntime")
        self.cancel_action = self.toolbar.addAction("Cancel", self.sig_cancel_requested.emit)
        self.cancel_action.setEnabled(False)
        self.status = QtWidgets.QLabel(body)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail = QtWidgets.QPlainTextEdit(body, readOnly=True)
        self.detail.setAccessibleName("Traced dispatch")
        self.detail.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self._plot = self._histogram = None  # built on first use: pyqtgraph costs the app's start
        # the error plot, the histogram and the numbers side by side: each gets the dock's whole height
        self._plots = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, body)
        self._plots.setChildrenCollapsible(False)
        self._plots.addWidget(self.detail)
        # the row takes the dock's height, whatever its size hint, down to a plot's readable height
        self._plots.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Ignored)
        self._plots.setMinimumHeight(PLOT_MIN_PX)
        self._layout = QtWidgets.QVBoxLayout(body)
        self._layout.setContentsMargins(2, 2, 2, 2)
        self._layout.addWidget(self.toolbar)
        self._layout.addWidget(self.status)
        self._layout.addWidget(self._plots, 1)
        self.setWidget(body)
        self.report: TraceReport | None = None
        self._points: list[int] = []  # dispatch index of each plotted point
        self.show_report(None)

    # -- state -----------------------------------------------------------------
    def set_builds(self, names: list[str]) -> None:
        """The builds on offer: `main` first, then the workspace's built variants."""
        current = self.build_box.currentText()
        self.build_box.clear()
        self.build_box.addItems(["main", *[n for n in names if n != "main"]])
        if current in names:
            self.build_box.setCurrentText(current)

    def build(self) -> str:
        return self.build_box.currentText() or "main"

    def set_running(self, running: bool, text: str = "") -> None:
        self.trace_action.setEnabled(not running)
        self.break_action.setEnabled(not running)
        self.cancel_action.setEnabled(running)
        if text:
            self.status.setStyleSheet("")
            self.status.setText(text)

    def show_failure(self, message: str, what: str = "Trace") -> None:
        self.set_running(False)
        self.status.setStyleSheet(BAD_STYLE)
        self.status.setText(f"{what} failed: {message}")

    def show_break(self, result: "BreakResult") -> None:
        """The output of IREE's own break after one dispatch, against its ONNX tensor."""
        d = result.dispatch
        self.status.setStyleSheet(BAD_STYLE if d.departs else OK_STYLE)
        verdict = "DEPARTS from" if d.departs else "agrees with"
        against = f"ONNX tensor {d.onnx_tensor!r}" if d.paired else "no ONNX tensor (unpaired)"
        self.status.setText(f"IREE's own break after dispatch #{result.index} ({result.flag}): its output "
                            + (f"{verdict} {against}" if d.paired else f"is paired with {against}"))
        lines = [result.summary_lines()[0], *detail_lines(d)]
        self.detail.setPlainText("\n".join([*lines, *(f"note: {n}" for n in result.notes)]))
        self._show_histogram(d, f"break after #{result.index}")

    def show_report(self, report: TraceReport | None) -> None:
        self.report = report
        if report is None:
            self.status.setStyleSheet("")
            self.status.setText("No trace yet: compare each dispatch of the build with the ONNX model.")
            self.detail.clear()
            if self._plot is not None:
                self._plot.clear()
            return
        first = report.first_divergent
        head = report.summary_lines()[0]
        if first is None:
            self.status.setStyleSheet(OK_STYLE if report.ok else BAD_STYLE)
            reason = report.locate().reason
            self.status.setText(head + (": no dispatch departs" if report.ok else f": {reason}" if reason
                                        else ": the outputs differ"))
        else:
            self.status.setStyleSheet(BAD_STYLE)
            self.status.setText(f"{head}. First divergent dispatch: #{first.index} ({first.onnx_tensor})")
        self._draw(report)

    def show_dispatch(self, dispatch: int | None) -> None:
        d = None if self.report is None else next((t for t in self.report.dispatches if t.index == dispatch), None)
        self.detail.setPlainText("\n".join(detail_lines(d)) if d is not None else "")
        if self._plot is not None and d is not None and d.paired:
            self._mark(d)
        self._show_histogram(d)

    # -- plot --------------------------------------------------------------------
    @property
    def plot(self):
        if self._plot is None:
            from ..plot_theme import EngineeringAxis, plot_widget

            # the values drawn are log10 of the errors: the left axis labels the errors themselves
            error_axis = EngineeringAxis("left")
            error_axis.setLogMode(True)
            self._plot = plot_widget(self._plots, {"left": error_axis,
                                                   "bottom": EngineeringAxis("bottom", min_step=1)})
            self._plot.setAccessibleName("Per-dispatch error plot")
            self._plot.setLabel("bottom", "dispatch (execution order)")
            self._plot.setLabel("left", "relative error")
            self._plot.setToolTip("Each paired dispatch's largest error relative to its ONNX tensor's largest "
                                  "value; the dashed line is the tolerance")
            self._plot.setMinimumSize(240, PLOT_MIN_PX)
            self._plot.scene().sigMouseClicked.connect(self._on_click)
            self._plots.insertWidget(0, self._plot)
            self._stretch()
        return self._plot

    def _draw(self, report: TraceReport) -> None:
        import pyqtgraph as pg

        plot = self.plot
        plot.clear()
        paired = [d for d in report.dispatches if d.paired]
        self._points = [d.index for d in paired]
        if not paired:
            return
        xs = [float(d.index) for d in paired]
        plot.setXRange(min(xs) - 0.5, max(xs) + 0.5, padding=0.02)
        ys = [_log_error(d) for d in paired]
        brushes = [pg.mkBrush("#d62728" if d.departs else "#1f77b4") for d in paired]
        plot.addItem(pg.PlotDataItem(xs, ys, pen=pg.mkPen("#999999", width=1), symbol="o", symbolSize=8,
                                     symbolPen=None, symbolBrush=brushes))
        tolerances = {d.tolerance for d in paired}
        for tol in tolerances:
            plot.addItem(pg.InfiniteLine(pos=math.log10(max(tol, FLOOR)), angle=0,
                                         pen=pg.mkPen("#ff7f0e", style=QtCore.Qt.PenStyle.DashLine)))
        self._marker = pg.PlotDataItem([], [], pen=None, symbol="o", symbolSize=16, symbolBrush=None,
                                       symbolPen=pg.mkPen("#ff7f0e", width=2))
        plot.addItem(self._marker)
        if report.first_divergent is not None:
            self._mark(report.first_divergent)

    def _stretch(self) -> None:
        """Error plot : histogram : numbers as 5 : 3 : 4 of the width."""
        shares = {id(self._plot): 5, id(self._histogram): 3, id(self.detail): 4}
        widgets = [self._plots.widget(i) for i in range(self._plots.count())]
        total = max(self._plots.width(), 900)
        weights = [shares[id(w)] for w in widgets]
        self._plots.setSizes([total * w // sum(weights) for w in weights])
        for i, w in enumerate(weights):
            self._plots.setStretchFactor(i, w)

    def _mark(self, d: DispatchTrace) -> None:
        self._marker.setData([float(d.index)], [_log_error(d)])

    def _show_histogram(self, d: DispatchTrace | None, title: str = "") -> None:
        """The selected dispatch's values (IREE's result) as a histogram beside the error plot."""
        if self._histogram is None:
            if d is None or not d.histogram:
                return
            from ..plot_theme import plot_widget

            self._histogram = plot_widget(self._plots)
            self._histogram.setAccessibleName("Value histogram of the selected dispatch")
            self._histogram.setMinimumSize(200, PLOT_MIN_PX)
            self._histogram.setLabel("bottom", "value (IREE's result)")
            self._histogram.setLabel("left", "elements")
            self._plots.insertWidget(self._plots.indexOf(self.detail), self._histogram)
            self._stretch()
        import pyqtgraph as pg

        self._histogram.clear()
        if d is None or not d.histogram:
            return
        edges, counts = d.histogram["edges"], d.histogram["counts"]
        width = (edges[-1] - edges[0]) / max(1, len(counts)) or 1.0
        self._histogram.addItem(pg.BarGraphItem(x0=edges[:-1], width=width, height=counts, brush="#1f77b4"))
        self._histogram.setTitle(f"{title or f'dispatch #{d.index}'}: {'x'.join(map(str, d.shape))} {d.dtype}")

    def histogram_bars(self) -> int:
        return 0 if self._histogram is None else sum(1 for i in self._histogram.getPlotItem().items
                                                     if type(i).__name__ == "BarGraphItem")

    def point_count(self) -> int:
        return len(self._points)

    def _on_click(self, event) -> None:
        if not self._points:
            return
        vb = self._plot.getPlotItem().vb
        x = vb.mapSceneToView(event.scenePos()).x()
        nearest = min(self._points, key=lambda i: abs(i - x))
        self.sig_dispatch_selected.emit(nearest)
