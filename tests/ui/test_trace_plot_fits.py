"""The numerics plot in a short dock (the height the default layout gives it at 1280x800): the plot keeps
a readable height, its axis titles are whole, the ticks read as errors, nothing scrolls."""

from __future__ import annotations

import pytest
from PySide6 import QtGui

from npu_studio.core.debug.trace_report import DispatchTrace, TraceReport
from npu_studio.ui.layout import make_dock_fit
from npu_studio.ui.trace.dock import PLOT_MIN_PX, TraceDock


def report() -> TraceReport:
    dispatches = [DispatchTrace(i, f"d{i}", [4, 4], "float32", onnx_tensor=f"t{i}", onnx_node=f"n{i}",
                                max_abs_error=10.0 ** -(7 - i / 2), max_rel_error=10.0 ** -(7 - i / 2), scale=1.0,
                                tolerance=1e-4, outside=0, departs=i == 7,
                                histogram={"edges": [0.0, 1.0, 2.0], "counts": [3, 5]})
                  for i in range(8)]
    return TraceReport("ws", "main", [[4, 4]], None, dispatches, [], 0.1, 0.1, 0.1)


def drawn_texts(axis) -> list[str]:
    image = QtGui.QImage(16, 16, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        return [text for _r, _f, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


@pytest.mark.parametrize("height", [270, 420])
def test_the_error_plot_is_readable_in_a_short_dock(qtbot, height):
    dock = TraceDock()
    make_dock_fit(dock)  # the scroll area every tool dock sits in
    qtbot.addWidget(dock)
    dock.resize(1280, height)
    dock.show()
    qtbot.waitExposed(dock)
    dock.show_report(report())
    dock.show_dispatch(7)
    qtbot.wait(100)
    scroll = dock.widget()
    assert not scroll.verticalScrollBar().isVisible(), "the dock's contents scroll"
    plot = dock.plot
    assert plot.height() >= PLOT_MIN_PX and plot.isVisible()
    shown = plot.mapToScene(plot.viewport().rect()).boundingRect()
    for side, title in (("left", "relative error"), ("bottom", "dispatch (execution order)")):
        axis = plot.getAxis(side)
        assert axis.labelText == title
        label = axis.label.mapRectToScene(axis.label.boundingRect())
        # along its text (the rotated title: up the plot) the title is whole, not "ve error"
        along = (label.top(), label.bottom(), shown.top(), shown.bottom()) if side == "left" else \
            (label.left(), label.right(), shown.left(), shown.right())
        assert along[2] <= along[0] and along[1] <= along[3], (side, label, shown)
    ticks = drawn_texts(plot.getAxis("left"))
    assert "1e-6" in ticks and "0.0001" in ticks, ticks  # the errors themselves, not their log10
    assert all(float(t) == int(float(t)) for t in drawn_texts(plot.getAxis("bottom"))), "a tick between dispatches"
    # the numbers of the selected dispatch beside the plots, whole lines at this height
    assert dock.detail.isVisible() and "Dispatch #7" in dock.detail.toPlainText()
    assert dock.detail.geometry().top() == pytest.approx(plot.geometry().top(), abs=2)
    assert dock._plots.geometry().bottom() <= scroll.viewport().height()
