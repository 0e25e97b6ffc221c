"""After a restart, the schedule shows the restored dispatch as a click on it would: its tasks
highlighted and the time axis zoomed to them (not the whole run)."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
from PySide6 import QtCore

from npu_studio.core.workspace.workspace import Workspace
from npu_studio.ui.main_window import MainWindow
from tests.core.npu.npu_models import fire
from tests.zoo_cache import cached_workspace


def fire_workspace(tmp_path) -> Workspace:
    """A squeezenet fire module (several dispatches), compiled once per run, copied for this test."""
    def make(folder):
        path = folder / "fire.onnx"
        onnx.save(fire(), path)
        return path

    shared = cached_workspace("fire-ui", make, group="ui-models")
    shutil.copytree(shared.root, tmp_path / "ws", symlinks=True)
    return Workspace.open(tmp_path / "ws")


def test_the_restored_dispatch_is_zoomed_to_on_the_schedule(qtbot, tmp_path):
    ws = fire_workspace(tmp_path)
    settings_path = str(tmp_path / "settings.ini")
    first = MainWindow(QtCore.QSettings(settings_path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    first.show()
    first.open_path(ws.root)
    qtbot.waitUntil(lambda: first.schedule_controller.run is not None, timeout=120_000)
    model = first.schedule_controller.run.model
    # the dispatch with the shortest span: zoomed to, it is clearly not the whole run
    spans = {d: (model.task_start[model.task_dispatch == d].min(), model.task_end[model.task_dispatch == d].max())
             for d in np.unique(model.task_dispatch).tolist()}
    dispatch = min(spans, key=lambda d: spans[d][1] - spans[d][0])
    first.select_dispatch(dispatch)
    first.close()
    first.jobs.stop_all()

    second = MainWindow(QtCore.QSettings(settings_path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    second.show()
    assert second.restore_last_session()
    qtbot.waitUntil(lambda: second.schedule_controller.run is not None and second.selected_dispatch == dispatch,
                    timeout=120_000)
    qtbot.wait(200)
    chart = second.schedule.chart
    start, end = spans[dispatch]
    total = float(second.schedule_controller.run.model.totals.cycles)
    x0, x1 = chart.x_range()
    assert x0 <= start and end <= x1, (x0, x1, start, end)
    assert x1 - x0 <= 1.25 * (end - start) + 2.0, (x0, x1, start, end)
    assert x1 - x0 < 0.8 * total
    assert sorted(chart.highlighted) == sorted(second.schedule_controller.run.model.tasks_of_dispatch(dispatch))
    second.jobs.stop_all()
