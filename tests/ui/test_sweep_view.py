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
