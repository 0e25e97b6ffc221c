"""The sweep's Pareto view in the app: a clicked front point opens its schedule."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6 import QtCore, QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "npu"))
from flowgen import flow_snapshot  # noqa: E402

from npu_studio.core.sweep.executors import SerialExecutor  # noqa: E402
from npu_studio.core.sweep.run import run_sweep  # noqa: E402
from npu_studio.core.sweep.spec import load_spec  # noqa: E402
from npu_studio.ui.sweep.pareto import tip_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = """
target = "default"
models = ["{model}"]
[parameters]
"sram.size_kib" = [32, 64]
"dram.bytes_per_cycle" = [8, 64]
"mac_array.rows+mac_array.cols" = [8, 32]
"""


def _sweep(tmp_path):
    model = flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("{model}", str(model)))
    run_sweep(load_spec(spec), tmp_path / "out", SerialExecutor())
    return tmp_path / "out"


def test_clicking_a_front_point_opens_its_schedule(window, qtbot, tmp_path):
    out = _sweep(tmp_path)
    window.sweep_controller.open(str(out))
    view = window.sweep.view
    assert window.sweep.isVisible() and len(view.shown) == 8
    assert view.x_box.currentText() == "time_us" and view.y_box.currentText() == "energy_pj"
    # the front by hand: no other drawn point is at least as fast and as frugal
    for r in view.shown:
        beaten = any(o["time_us"] <= r["time_us"] and o["energy_pj"] <= r["energy_pj"]
                     and (o["time_us"], o["energy_pj"]) != (r["time_us"], r["energy_pj"])
                     for o in view.shown)
        assert (r in view.front_rows) == (not beaten)
    row = view.front_rows[-1]
    window.sweep.resize(700, 500)
    view.plot.getPlotItem().getViewBox().autoRange()
    qtbot.wait(50)
    scene = view.plot.mapToScene(view.point_position(row))
    assert view.row_at(scene) is row  # what hover shows and click opens
    tip = tip_text(row, view.params)
    assert f"sram.size_kib = {row['sram.size_kib']}" in tip and "energy_pj = " in tip
    window.activateWindow()  # Qt shows tooltips for the active window (a window manager would make it so)
    qtbot.waitUntil(lambda: QtWidgets.QApplication.activeWindow() is window, timeout=5000)
    qtbot.mouseMove(view.plot.viewport(), view.point_position(row))  # hover, and rest 2 s: the tip stays
    qtbot.wait(2000)
    assert QtWidgets.QToolTip.isVisible() and QtWidgets.QToolTip.text() == tip
    with qtbot.waitSignal(view.sig_point_clicked, timeout=5000) as clicked:
        qtbot.mouseClick(view.plot.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=view.point_position(row))
    assert clicked.args[0]["point"] == row["point"]
    point = window.sweep_controller.point_dock
    qtbot.waitUntil(lambda: point.model is not None, timeout=60000)
    # The point's own dock, titled with it; the open model's schedule is untouched (no model is open).
    assert point.isVisible() and f"Sweep point {row['point']}" in point.windowTitle()
    assert point.heading.isVisible() and f"sram.size_kib = {row['sram.size_kib']}" in point.heading.text()
    assert point.model.totals.cycles == row["cycles"]  # the sweep's own number for the point
    assert window.schedule_controller.run is None and window.schedule.model is None
    assert point.comparison is None  # nothing of its model shown before: nothing to compare with


def test_a_folder_without_results_is_a_banner(window, tmp_path):
    window.sweep_controller.open(str(tmp_path))
    assert window.sweep.banner.isVisibleTo(window.sweep)
    assert "not a sweep's results folder" in window.sweep.banner.text()


def test_export_csv_and_png(qtbot, tmp_path):
    from npu_studio.core.sweep.run import open_sweep
    from npu_studio.ui.sweep.pareto import ParetoView

    sweep = open_sweep(_sweep(tmp_path))
    view = ParetoView()
    qtbot.addWidget(view)
    view.set_rows(sweep.rows, sweep.params(), sweep.spec.base_values())
    view.export_csv(str(tmp_path / "f.csv"))
    lines = (tmp_path / "f.csv").read_text().splitlines()
    assert len(lines) == 9 and lines[0].endswith("time_us,energy_pj,on_front")
    assert sum(line.endswith("True") for line in lines) == len(view.front_rows)
    assert view.export_png(str(tmp_path / "f.png")) and (tmp_path / "f.png").stat().st_size > 0
    # sensitivity: SRAM against cycles with bandwidth and array at the base (64 B/cycle, 32x32)
    view.sens_param.setCurrentText("sram.size_kib")
    view.sens_metric.setCurrentText("cycles")
    (curve,) = view.sens_plot.getPlotItem().listDataItems()
    xs, ys = curve.getData()
    want = sorted((r["sram.size_kib"], r["cycles"]) for r in sweep.rows
                  if r["dram.bytes_per_cycle"] == 64 and r["mac_array.rows+mac_array.cols"] == 32)
    assert list(zip(xs.tolist(), ys.tolist())) == want


def test_run_a_sweep_in_the_app_with_progress_and_cancel(window, qtbot, tmp_path):
    model = flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("{model}", str(model)))
    dock, controller = window.sweep, window.sweep_controller
    controller.run_spec(str(spec), jobs=1)
    assert dock.cancel_button.isVisibleTo(dock) and not dock.run_button.isEnabled()
    # cancelled while its first batch runs: that batch is kept, the job stops after it, and the
    # banner says how to go on
    dock.cancel_button.click()
    qtbot.waitUntil(lambda: not window.jobs.is_running("sweep-run"), timeout=60000)
    assert "sweep cancelled" in dock.banner.text()
    from npu_studio.core.paths import sweeps_dir
    from npu_studio.core.sweep.out_folder import latest_default

    out = latest_default(spec)  # under the studio's home, never beside the spec
    assert out.parent == sweeps_dir() and not (tmp_path / "s").exists()
    cached = len(list((out / "cache").glob("*.json")))
    assert 0 < cached < 8
    controller.run_spec(str(spec), jobs=1)  # resumes
    qtbot.waitUntil(lambda: not window.jobs.is_running("sweep-run") and controller.sweep is not None,
                    timeout=60000)
    assert len(controller.sweep.rows) == 8 and len(dock.view.shown) == 8
    assert not dock.progress.isVisibleTo(dock) and dock.run_button.isEnabled()
    assert dock.progress.maximum() == 8 - cached  # only the missing points ran
