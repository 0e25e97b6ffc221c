"""ScheduleDock on the hand-made schedule: hover, click, row selection, stale, pin, export."""

from __future__ import annotations

import pytest
from PySide6 import QtCore

from npu_studio.ui.schedule.dock import ScheduleDock
from tests.core.npu.schedule_sample import sample_model


@pytest.fixture
def dock(qtbot):
    d = ScheduleDock()
    qtbot.addWidget(d)
    d.resize(1200, 600)
    d.show()
    qtbot.waitExposed(d)
    d.show_run(sample_model())
    return d


def test_engine_rows_sram_and_allocations_are_drawn(dock):
    chart = dock.chart
    assert chart.engines.getAxis("left")._tickLevels[0] == list(enumerate(["DMA0", "DMA1", "MAC", "VEC", "CPU"]))
    assert len(chart.bars) == 7 and len(chart.allocs) == 2
    assert chart.x_range()[0] <= 0 and chart.x_range()[1] >= 1500


def test_hover_text_and_click_selects_the_task(dock, qtbot):
    chart = dock.chart
    assert chart.text_at(450, 2).startswith("task #1 npu.conv")  # MAC row, 400-700
    assert chart.text_at(450, 3) is None  # VEC row is empty
    with qtbot.waitSignal(dock.sig_task_selected) as sig:
        chart.sig_task_clicked.emit(1)
    assert sig.args == [1]
    assert chart.selected_task == 1
    # one arrow (line + head) from task 0 and one to task 2, plus the outline
    assert len(chart._arrows) == 1 + 2 * 2


def test_click_on_the_plot_hits_the_bar_under_the_mouse(dock, qtbot):
    chart = dock.chart
    vb = chart.engines.getViewBox()
    scene = vb.mapViewToScene(QtCore.QPointF(1200, 4))  # CPU row, task 3
    assert chart._task_at_scene(scene) == 3


def test_selecting_a_summary_row_highlights_and_zooms_to_its_tasks(dock, qtbot):
    with qtbot.waitSignal(dock.sig_dispatch_selected) as sig:
        dock.summary.table.selectRow(dock.summary.row_of(1))
    assert sig.args == [1]
    assert dock.chart.highlighted == [3]
    x0, x1 = dock.chart.x_range()
    assert 900 <= x0 <= 1000 and 1500 <= x1 <= 1600


def test_summary_columns_sort_by_value(dock):
    s = dock.summary
    s.table.sortByColumn(3, QtCore.Qt.SortOrder.AscendingOrder)  # cycles
    assert s.items.item(0, 0).text() == "1"
    assert s.cell(0, "cycles") == "1,000" and s.cell(0, "bound") == "compute"


def test_a_rerun_shows_the_change_and_stale_marks(dock):
    dock.mark_stale("target changed")
    assert dock.is_stale() and "Stale: target changed" in dock.banner.full_text()
    dock.show_run(sample_model(scale=2.0), previous=dock.model)
    assert not dock.is_stale()
    assert dock.summary.change.text() == "change: total cycles 1,500 -> 3,000 (+100.0%)"
    assert dock.summary.cell(0, "change") == "1,000 -> 2,000 (+1,000)"


def test_pinned_run_is_shown_beside_and_compared_against(dock):
    dock.pin_current()
    assert dock.pinned_chart.isVisible()
    dock.show_run(sample_model(scale=0.5), previous=sample_model(scale=3.0))
    assert dock.comparison.before == 1500  # the pinned run, not the previous one
    dock.unpin()
    assert not dock.pinned_chart.isVisible()


def test_keyboard_zoom_pan_and_home(dock, qtbot):
    chart = dock.chart
    chart.setFocus()
    w0 = chart.x_range()[1] - chart.x_range()[0]
    qtbot.keyClick(chart, QtCore.Qt.Key.Key_Plus)
    w1 = chart.x_range()[1] - chart.x_range()[0]
    assert w1 == pytest.approx(w0 / 1.5, rel=1e-3)
    x0 = chart.x_range()[0]
    qtbot.keyClick(chart, QtCore.Qt.Key.Key_Right)
    assert chart.x_range()[0] == pytest.approx(x0 + 0.2 * w1, rel=1e-3)
    qtbot.keyClick(chart, QtCore.Qt.Key.Key_Home)
    assert chart.x_range()[1] - chart.x_range()[0] == pytest.approx(w0, rel=1e-3)


def test_microseconds_on_the_axis(dock):
    dock.unit_box.setCurrentIndex(1)
    axis = dock.chart.addresses.getAxis("bottom")  # 1000 MHz: 1,500 cycles are 1.5 µs
    assert axis.tickStrings([0.0, 500.0, 1500.0], axis.scale, 500.0) == ["0", "500 ns", "1.5 µs"]
    assert "0.100 us" in dock.chart.text_at(150, 0)


def test_png_of_the_chart(dock, tmp_path):
    assert dock.chart.grab_png(str(tmp_path / "chart.png"))
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_number_column_is_the_legend(dock):
    from npu_studio.ui.schedule.summary import dispatch_color

    s = dock.summary
    swatch = s.items.item(s.row_of(1), 0).data(QtCore.Qt.ItemDataRole.DecorationRole)
    assert swatch.name() == dispatch_color(1)


def test_the_chart_gets_two_thirds_of_the_width_when_built_after_the_dock_is_shown(qtbot):
    d = ScheduleDock()
    qtbot.addWidget(d)
    d.resize(1200, 500)
    d.show()
    qtbot.waitExposed(d)
    d.show_run(sample_model())  # the charts are built now, after the layout
    charts, summary = d._split.sizes()
    assert charts > 1.5 * summary


def test_a_long_verdict_and_a_stale_banner_stay_one_line_and_take_no_rows(dock, qtbot):
    qtbot.wait(20)
    lines = [f"vs onnxruntime max error {i}.0 DIFFERS " + "x" * 200 for i in range(8)]
    dock.show_check(lines, False)
    dock.mark_stale("the NPU program is being rebuilt after a long, long explanation " * 4)
    qtbot.wait(20)
    one_line = dock.banner.fontMetrics().height() + 10
    for banner in (dock.check_label, dock.banner):
        assert banner.isVisible() and banner.height() <= one_line
        assert "\n" not in banner.text() and banner.full_text() in banner.toolTip()
    assert dock.check_label.full_text() == "\n".join(lines)  # every line kept, in the tooltip
    assert dock.chart.row_pixels() >= 14  # the engine rows keep their readable pitch


def test_the_bar_tooltip_stays_while_the_pointer_rests(dock, qtbot):
    from PySide6 import QtWidgets

    chart = dock.chart
    vb = chart.engines.getViewBox()
    scene = vb.mapViewToScene(QtCore.QPointF(450, 2))  # the MAC bar of task #1
    pos = chart.view.mapFromScene(scene)
    dock.activateWindow()  # Qt shows tooltips for the active window (a window manager would make it so)
    qtbot.waitUntil(lambda: QtWidgets.QApplication.activeWindow() is dock, timeout=5000)
    qtbot.mouseMove(chart.view.viewport(), pos)
    qtbot.waitUntil(lambda: QtWidgets.QToolTip.isVisible() and QtWidgets.QToolTip.text().startswith("task #1"))
    # Resting: Qt sends the viewport a ToolTip event about 700 ms later; the scene used to hide the tip then.
    qtbot.wait(2000)
    assert QtWidgets.QToolTip.isVisible() and QtWidgets.QToolTip.text().startswith("task #1")
