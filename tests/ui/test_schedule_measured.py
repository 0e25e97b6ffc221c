"""Measured beside simulated in the schedule: a hatched "measured" row under each engine a measured
task (dispatch) uses, on the hand-made schedule (tests/core/npu/schedule_sample.py: every number
chosen there, so the bars' places are worked out here by hand)."""

from __future__ import annotations

import pytest

from npu_studio.ui.schedule.dock import ScheduleDock
from tests.core.npu.schedule_sample import ENGINES, sample_model


@pytest.fixture
def dock(qtbot):
    d = ScheduleDock()
    qtbot.addWidget(d)
    d.resize(1200, 600)
    d.show()
    qtbot.waitExposed(d)
    return d


def _labels(chart):
    return [text for _, text in chart.engines.getAxis("left")._tickLevels[0]]


def test_task_measurements_get_a_row_under_each_engine_they_use(dock):
    model = sample_model()
    # task 0 simulated 0-400 (DMA0 0-100, MAC 100-400), measured 800: twice as slow;
    # task 3 simulated 1000-1500 on the CPU, measured 250: half
    model.with_measured("task", {0: 800.0, 3: 250.0})
    dock.show_run(model)
    chart = dock.chart
    assert _labels(chart) == ["DMA0", "DMA0 measured", "DMA1", "MAC", "MAC measured", "VEC", "CPU", "CPU measured"]
    assert len(chart.measured_bars) == 3 and len(chart.bars) == 7
    # each step stretched by its task's measured / simulated: DMA0 0-200, MAC 100-700, CPU 1000-1250
    tip = chart.text_at(150, 1)
    assert tip.startswith("measured task #0 of dispatch #0") and "measured: 800 cycles" in tip
    assert "simulated: 400 cycles (-50.0% simulated against measured)" in tip
    assert chart.text_at(250, 1) is None
    assert chart.text_at(650, 4).startswith("measured task #0") and chart.text_at(750, 4) is None
    assert "measured: 250 cycles" in chart.text_at(1200, 7) and chart.text_at(1300, 7) is None
    # the simulated bars moved with their rows: MAC is row 3, CPU row 6
    assert chart.text_at(450, 3).startswith("task #1 npu.conv")
    assert chart.text_at(1300, 6).startswith("task #3 npu.fallback")
    # a measured task's own tooltip carries both counts; an unmeasured one says nothing of it
    assert "measured: 800 cycles (simulated 400)" in chart.text_at(200, 3)
    assert "measured:" not in chart.text_at(450, 3)
    # clicking a measured bar selects its task
    assert chart.task_at(650, 4) == 0


def test_dispatch_measurements_and_their_tooltip(dock):
    model = sample_model()
    model.with_measured("dispatch", {1: 1000.0})  # the CPU fallback: simulated 500 (1000-1500)
    dock.show_run(model)
    chart = dock.chart
    assert _labels(chart) == [*ENGINES, "CPU measured"]
    tip = chart.text_at(1900, 5)
    assert tip.startswith("measured dispatch #1") and "measured: 1,000 cycles" in tip and "simulated: 500" in tip
    dock.unit_box.setCurrentIndex(dock.unit_box.findData("us"))  # 1000 MHz: 1 µs is 1000 cycles
    assert "measured: 1.000 us" in chart.text_at(1900, 5)


def test_without_measurements_nothing_changes(dock):
    dock.show_run(sample_model())
    assert _labels(dock.chart) == ENGINES and dock.chart.measured_bars is None
