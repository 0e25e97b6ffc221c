"""NPU > Run on NPU in the real main window: the verdict of `run --npu` in the log."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.npu.hal.plugin_build import CompilerMissing, find_cc
from npu_studio.ui.main_window import MainWindow

from .test_npu_in_app import WAIT, wait_npu


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.drafts.clear()
    w.jobs.stop_all()


@pytest.mark.parametrize("mode", ["in-process", "standalone"])
def test_run_on_npu_logs_the_verdict(window, qtbot, fresh_example, mode):
    try:
        find_cc()
    except CompilerMissing as exc:
        pytest.skip(f"no C compiler ({exc.reason})")
    window.open_path(fresh_example.root)
    wait_npu(window, qtbot)
    log: list[str] = []
    window.studio.sig_log.connect(lambda text, error: log.append(text))
    action = window.npu.run_standalone_action if mode == "standalone" else window.npu.run_on_npu_action
    action.trigger()
    qtbot.waitUntil(lambda: log and log[-1] in ("OK", "MISMATCH"), timeout=WAIT)
    text = "\n".join(log)
    assert log[-1] == "OK" and "1 dispatches through the NPU plugin" in text and "vs onnxruntime" in text
    assert f"({mode}:" in text  # the mode that ran, as the report names it
    assert (fresh_example.root / "npu" / "hal" / "module.vmfb").is_file()


def test_measure_cpu_adds_a_row_under_the_engines_and_to_the_trace(window, qtbot, fresh_example, tmp_path):
    import json

    from .test_npu_in_app import open_workspace

    open_workspace(window, qtbot, fresh_example)
    qtbot.waitUntil(lambda: window.schedule_controller.run is not None, timeout=WAIT)
    dock, controller = window.schedule, window.schedule_controller
    dock.measure_action.trigger()
    qtbot.waitUntil(lambda: dock.chart.cpu_bars is not None, timeout=WAIT)
    (row,) = controller.measured
    assert row.measured_cpu_us > 0 and row.simulated_npu_us > 0
    model = dock.chart.model
    ticks = dict(dock.chart.engines.getAxis("left")._tickLevels[0])
    assert ticks[len(model.engines)] == "CPU measured"
    # drawn from where dispatch #0 starts on the NPU, as long as it took on the CPU
    starts = model.task_start[model.task_dispatch == 0]
    (x0,), (x1,), (d,) = dock.chart.cpu_track
    assert d == 0 and x0 == starts.min()
    assert x1 - x0 == pytest.approx(row.measured_cpu_us * model.totals.clock_mhz)
    controller.export("trace", str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    (cpu,) = [e for e in events if e.get("cat") == "cpu"]
    assert cpu["dur"] == pytest.approx(row.measured_cpu_us)
