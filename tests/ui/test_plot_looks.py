"""What a user sees of the plots: one light theme, engineering units, SRAM scaled to what is used,
every engine row named, dispatch colours far apart and apart from the selection."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from npu_studio.ui.schedule.chart import CRITICAL, CPU_ROW, HIGHLIGHT, ScheduleChart
from npu_studio.ui.schedule.summary import PALETTE, dispatch_color
from tests.core.npu.schedule_sample import sample_model

MIB = 1024 * 1024


def dominant_colour(widget) -> QtGui.QColor:
    """The colour of most pixels of the widget as painted: its ground."""
    image = widget.grab().toImage().convertToFormat(QtGui.QImage.Format.Format_RGB32)
    ptr = image.constBits()
    pixels = np.frombuffer(ptr, np.uint32, image.width() * image.height())
    values, counts = np.unique(pixels, return_counts=True)
    return QtGui.QColor.fromRgb(int(values[np.argmax(counts)]))


def drawn_texts(axis) -> list[str]:
    """The tick labels pyqtgraph draws on `axis` now (it leaves out those that do not fit)."""
    image = QtGui.QImage(16, 16, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in specs[2]]


@pytest.fixture
def chart(qtbot):
    c = ScheduleChart()
    qtbot.addWidget(c)
    c.resize(1000, 420)
    c.show()
    qtbot.waitExposed(c)
    return c


def settle(qtbot, chart):
    qtbot.wait(50)
    chart.view.scene().update()
    QtCore.QCoreApplication.processEvents()


# -- one light theme -------------------------------------------------------------------------


def test_every_plot_has_the_gantts_light_ground(qtbot, chart):
    from npu_studio.ui.sweep.pareto import ParetoView
    from npu_studio.ui.trace.dock import TraceDock

    chart.set_model(sample_model())
    trace = TraceDock()
    pareto = ParetoView()
    for w in (trace, pareto):
        qtbot.addWidget(w)
        w.resize(900, 500)
        w.show()
    trace.plot  # noqa: B018 - the error plot, as the first trace shows it
    pareto.tabs.setCurrentIndex(1)
    qtbot.wait(50)
    grounds = {name: dominant_colour(w) for name, w in (
        ("Gantt", chart.view), ("numerics", trace.plot), ("Pareto", pareto.plot), ("sensitivity", pareto.sens_plot))}
    for name, colour in grounds.items():
        assert colour.lightness() >= 245, f"{name} plot is dark: {colour.name()}"
    assert len({c.name() for c in grounds.values()}) == 1, grounds


def test_no_plot_is_made_outside_the_theme():
    """Every pyqtgraph widget comes from plot_theme: a plot made elsewhere would have pyqtgraph's black."""
    root = Path(__file__).resolve().parents[2] / "npu_studio"
    makers = re.compile(r"\b(pg\.|pyqtgraph\.)(PlotWidget|GraphicsLayoutWidget|GraphicsView)\(")
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "plot_theme.py" and makers.search(p.read_text())]
    assert offenders == []


# -- engineering units ---------------------------------------------------------------------------


def test_the_time_axis_reads_in_engineering_units(qtbot, chart):
    chart.set_model(sample_model(scale=1000.0))  # 1.5 million cycles
    settle(qtbot, chart)
    cycles = drawn_texts(chart.time_axis)
    assert cycles and not any("e+" in t or "e-" in t for t in cycles), cycles
    assert "1M" in cycles and all(re.fullmatch(r"\d+(\.\d+)?[kM]?", t) for t in cycles), cycles
    assert chart.time_axis.labelText == "cycles"
    chart.set_unit("us")  # 1000 MHz: 1.5 million cycles are 1.5 ms
    settle(qtbot, chart)
    times = drawn_texts(chart.time_axis)
    assert "1 ms" in times and all(re.fullmatch(r"0|\d+(\.\d+)? [µm]s", t) for t in times), times


def test_engineering_formatting():
    from npu_studio.ui.plot_theme import engineering

    assert [engineering(v, "", 2e5) for v in (0, 2e5, 1e6, 1.2e6)] == ["0", "200k", "1M", "1.2M"]
    assert engineering(691_686) == "692k"
    assert engineering(2.5e-4, "s", 5e-5) == "250 µs" and engineering(1.5e-3, "s", 5e-4) == "1.5 ms"
    assert engineering(0.25, "", 0.05) == "0.25" and engineering(1e-6) == "1e-6"


# -- SRAM -----------------------------------------------------------------------------------------


def test_a_small_use_fills_the_sram_plots_and_the_title_names_the_capacity(qtbot, chart):
    small = dataclasses.replace(sample_model(), sram_capacity=2 * MIB)  # peak 2 KiB of 2 MiB
    chart.set_model(small)
    settle(qtbot, chart)
    _, (y0, y1) = chart.sram.getViewBox().viewRange()
    assert y0 == pytest.approx(0) and 2048 < y1 <= 2 * 2048  # the peak at half the height or more
    _, (a0, a1) = chart.addresses.getViewBox().viewRange()
    assert 2048 < a1 <= 2 * 2048  # the highest address used: 1024 + 1024
    assert chart.sram_title.textItem.toPlainText() == "SRAM used: peak 2 KiB of 2 MiB"
    assert chart.address_title.textItem.toPlainText() == "SRAM address: up to 2 KiB of 2 MiB"
    # no capacity line out of view
    assert not [i for i in chart.sram.items if type(i).__name__ == "InfiniteLine"]


@pytest.mark.parametrize("height", [420, 900])
def test_the_titles_never_cover_the_data(qtbot, chart, height):
    chart.resize(1000, height)
    chart.set_model(sample_model())  # peak 2 KiB of 4 KiB: the capacity line shows
    settle(qtbot, chart)
    lines = [i for i in chart.sram.items if type(i).__name__ == "InfiniteLine"]
    assert [line.value() for line in lines] == [4096]
    for plot, title, top in ((chart.sram, chart.sram_title, 4096), (chart.addresses, chart.address_title, 2048)):
        vb = plot.getViewBox()
        data_top = vb.mapViewToScene(QtCore.QPointF(0, top)).y()
        assert title.sceneBoundingRect().bottom() <= data_top + 0.5, (title.sceneBoundingRect(), data_top)
        assert vb.sceneBoundingRect().top() <= title.sceneBoundingRect().top()  # and the title is inside


# -- rows and colours -------------------------------------------------------------------------------


def test_every_engine_row_is_labelled_with_the_measured_cpu_row(qtbot, chart):
    chart.set_model(sample_model())
    chart.set_cpu_track(np.array([1000.0]), np.array([1400.0]), np.array([1]))
    settle(qtbot, chart)
    assert drawn_texts(chart.engines.getAxis("left")) == ["DMA0", "DMA1", "MAC", "VEC", "CPU", CPU_ROW]
    assert chart.row_pixels() >= 14


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB colour, from the CIE formulas."""
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = lambda t: t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29  # noqa: E731
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_dispatch_colours_are_far_apart_and_apart_from_the_selection_and_critical_path():
    for a, b in itertools.combinations(PALETTE, 2):
        assert math.dist(_lab(a), _lab(b)) >= 20, (a, b)
    for colour in PALETTE:
        assert math.dist(_lab(colour), _lab(HIGHLIGHT)) >= 30, colour
        assert math.dist(_lab(colour), _lab(CRITICAL)) >= 30, colour
    # neighbours in the program order never share a colour
    assert all(len({dispatch_color(d + k) for k in range(len(PALETTE))}) == len(PALETTE) for d in range(30))
