"""GanttChart: rows, bars, hover, click, horizontal-only zoom, 20,000 bars."""

from __future__ import annotations

import os
import random
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from npu_studio.ui.schedule.gantt import GanttChart, GanttTask  # noqa: E402

ROWS = ["DMA0", "DMA1", "MAC", "VEC", "CPU"]
TASKS = [
    GanttTask("load-a", "DMA0", 0, 100, "load A tile 0"),
    GanttTask("load-b", "DMA1", 0, 80, "load B tile 0"),
    GanttTask("mm-0", "MAC", 100, 400, "matmul tile 0", "#ff0000"),
    GanttTask("relu-0", "VEC", 400, 450, "relu tile 0"),
    GanttTask("store", "DMA0", 450, 500, "store C"),
]


@pytest.fixture
def chart(qtbot):
    c = GanttChart()
    qtbot.addWidget(c)
    c.resize(800, 300)
    c.show()
    qtbot.waitExposed(c)
    return c


def widget_pos(chart, x, y):
    scene = chart._vb.mapViewToScene(QtCore.QPointF(x, y))
    return chart.plot.mapFromScene(scene)


def test_rows_in_given_order_and_unit(chart):
    chart.set_tasks(TASKS, unit="ns", rows=ROWS)
    assert chart.rows() == ROWS  # CPU has no tasks but keeps its row
    assert chart.unit() == "ns"
    chart.set_tasks(TASKS)
    assert chart.rows() == ["DMA0", "DMA1", "MAC", "VEC"]


def test_task_at(chart):
    chart.set_tasks(TASKS, rows=ROWS)
    assert chart.task_at(50, 0).id == "load-a"
    assert chart.task_at(470, 0).id == "store"
    assert chart.task_at(200, 0) is None
    assert chart.task_at(200, 2).id == "mm-0"
    assert chart.task_at(200, 2.45) is None  # between rows
    assert chart.task_at(200, 4) is None


def test_click_on_bar_emits_task_id(chart, qtbot):
    chart.set_tasks(TASKS, rows=ROWS)
    qtbot.wait(20)
    with qtbot.waitSignal(chart.sig_task_clicked, timeout=2000) as blocker:
        qtbot.mouseClick(chart.plot.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=widget_pos(chart, 250, 2))
    assert blocker.args == ["mm-0"]
    with qtbot.assertNotEmitted(chart.sig_task_clicked):
        qtbot.mouseClick(chart.plot.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=widget_pos(chart, 250, 0))


def test_hover_shows_label(chart, qtbot):
    chart.set_tasks(TASKS, rows=ROWS)
    qtbot.wait(20)
    qtbot.mouseMove(chart.plot.viewport(), widget_pos(chart, 425, 3))
    qtbot.waitUntil(lambda: "relu tile 0" in chart.plot.toolTip())
    assert "400 – 450 cycles" in chart.plot.toolTip()
    qtbot.mouseMove(chart.plot.viewport(), widget_pos(chart, 250, 0))
    qtbot.waitUntil(lambda: chart.plot.toolTip() == "")


def test_wheel_zooms_x_only(chart, qtbot):
    chart.set_tasks(TASKS, rows=ROWS)
    qtbot.wait(20)
    x0, y0 = chart.x_range(), chart.y_range()
    pos = QtCore.QPointF(widget_pos(chart, 250, 2))
    event = QtGui.QWheelEvent(
        pos, QtCore.QPointF(chart.plot.viewport().mapToGlobal(pos.toPoint())),
        QtCore.QPoint(0, 0), QtCore.QPoint(0, 240), QtCore.Qt.MouseButton.NoButton,
        QtCore.Qt.KeyboardModifier.NoModifier, QtCore.Qt.ScrollPhase.NoScrollPhase, False,
    )
    QtWidgets.QApplication.sendEvent(chart.plot.viewport(), event)
    qtbot.wait(20)
    x1, y1 = chart.x_range(), chart.y_range()
    assert (x1[1] - x1[0]) < (x0[1] - x0[0])  # zoomed in
    assert y1 == pytest.approx(y0)


def many_tasks(n=20_000):
    rng = random.Random(1)
    tasks, t = [], {r: 0.0 for r in ROWS}
    for i in range(n):
        row = ROWS[i % len(ROWS)]
        start = t[row] + rng.uniform(0, 5)
        end = start + rng.uniform(1, 20)
        t[row] = end
        color = None if i % 3 else "#aa3377"
        tasks.append(GanttTask(f"t{i}", row, start, end, f"task {i}", color))
    return tasks


def test_20000_bars_stay_fast(chart, qtbot):
    tasks = many_tasks()
    t0 = time.perf_counter()
    chart.set_tasks(tasks, rows=ROWS)
    set_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    chart.plot.viewport().repaint()
    paint_all = time.perf_counter() - t0
    drawn = sum(item.rects_drawn for item in chart._items)
    assert 0 < drawn <= 2 * chart._vb.width() * len(chart._items)  # merged per pixel
    end = max(t.end for t in tasks)
    chart.zoom_to(end / 2, end / 2 + 200)
    t0 = time.perf_counter()
    chart.plot.viewport().repaint()
    paint_zoomed = time.perf_counter() - t0
    assert set_time < 2.0 and paint_all < 0.25 and paint_zoomed < 0.25, (
        set_time, paint_all, paint_zoomed)
    mid = tasks[10_000]
    assert chart.task_at((mid.start + mid.end) / 2, ROWS.index(mid.row)).id == mid.id
