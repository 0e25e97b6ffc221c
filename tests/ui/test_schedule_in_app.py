"""The schedule dock in the real main window: simulate, hover, click, row selection, what-if."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from npu_studio.resources import TARGETS_DIR

from .test_npu_in_app import WAIT, make_window, open_workspace


@pytest.fixture
def window(qtbot, tmp_path, fresh_example):
    from PySide6 import QtCore

    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    open_workspace(w, qtbot, fresh_example)
    qtbot.waitUntil(lambda: w.schedule_controller.run is not None, timeout=WAIT)
    yield w
    w.jobs.stop_all()


def test_simulated_example_hover_click_and_row_selection(window, qtbot):
    dock, program = window.schedule, window.session.npu.program
    model = dock.chart.model
    assert model is not None and not dock.is_stale()
    assert len(model.bar_task) == sum(len(t.steps) for t in program.tasks)

    # hover: the first task of dispatch 0 on its compute engine
    first = program.tasks_of(0)[0]
    bar = next(i for i, t in enumerate(model.bar_task.tolist()) if t == first.id and model.bar_kind[i] == "compute")
    x = (model.bar_start[bar] + model.bar_end[bar]) / 2
    text = dock.chart.text_at(x, float(model.bar_engine[bar]))
    assert text.startswith(f"task #{first.id} ") and "dispatch #0" in text

    # click: the dispatch is selected in the table and the IR is scrolled to its region
    window.show_phase("flow")
    dock.chart.sig_task_clicked.emit(first.id)
    assert window.session.selection.task == first.id and window.selected_dispatch == 0
    assert window.dispatch_table.selected_dispatch() == 0
    assert window.ir_view.marked_key() == 0
    region = next(r for r in window.ir_view.regions() if r.key == 0)
    top, bottom = window.ir_view.visible_line_range()
    assert top <= region.start_line <= bottom

    # a dispatch row selected elsewhere highlights all of its tasks and zooms to them
    window.select_dispatch(None)
    window.select_dispatch(0)
    assert dock.chart.highlighted == [t.id for t in program.tasks_of(0)]
    lo, hi = model.span(dock.chart.highlighted)
    x0, x1 = dock.chart.x_range()
    assert x0 <= lo and hi <= x1 and (x1 - x0) <= 1.2 * (hi - lo) + 2

    # the task in the NPU IR view
    window.show_phase("npu")
    window.session.select_task(first.id)
    line = window.ir_view.textCursor().blockNumber() + 1
    assert window.ir_view.text().splitlines()[line - 1].lstrip().startswith(f"%t{first.id} = ")


def test_target_edit_reruns_marks_stale_and_shows_the_change(window, qtbot):
    dock = window.schedule
    before = dock.chart.model.totals.cycles
    original = (TARGETS_DIR / "default.toml").read_text()
    # a quarter of the DRAM bandwidth: the memory-bound example can only get slower
    slower = original.replace("bytes_per_cycle = 64", "bytes_per_cycle = 16")
    assert slower != original
    window.npu.edit_target()
    window.npu.editor.set_text(slower)
    window.npu.editor.apply()
    assert dock.is_stale()  # the old run is on screen, marked, while the rerun goes on
    qtbot.waitUntil(lambda: not dock.is_stale() and dock.chart.model.totals.cycles != before, timeout=WAIT)
    after = dock.chart.model.totals.cycles
    assert after > before
    assert dock.summary.change.text().startswith(f"change: total cycles {before:,} -> {after:,}")
    assert dock.summary.cell(0, "change").startswith(f"{dock.previous.row(0).cycles:,} -> ")


def test_check_numerics_from_the_dock(window, qtbot):
    dock = window.schedule
    dock.check_action.trigger()
    qtbot.waitUntil(lambda: dock.check_label.full_text().endswith(("OK", "MISMATCH")) or
                    dock.check_label.full_text().startswith("Check failed"), timeout=WAIT)
    text = dock.check_label.full_text()
    assert text.endswith("\nOK"), text
    assert "vs onnxruntime" in text and "vs iree-cpu" in text
