"""The sweep dock runs on a Dask scheduler it is given (a bad or unreachable address is a
one-line banner), and the Pareto and sensitivity plots have log axes, on by default for
sizes, bandwidths and energies spanning over a decade."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from PySide6 import QtCore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "npu"))
from flowgen import flow_snapshot  # noqa: E402

from npu_studio.core.sweep.executors import SerialExecutor  # noqa: E402
from npu_studio.core.sweep.run import run_sweep  # noqa: E402
from npu_studio.core.sweep.spec import load_spec  # noqa: E402
from npu_studio.ui.sweep import dock as sweep_dock  # noqa: E402
from npu_studio.ui.sweep.pareto import ParetoView  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = """
target = "default"
models = ["{model}"]
[parameters]
"sram.size_kib" = [32, 64]
"dram.bytes_per_cycle" = [8, 64]
"""


def _rows():
    """Six points by hand: SRAM 64..2048 KiB, time 101..17.7 us (under a decade), energy
    1..1e5 pJ (five decades)."""
    return [{"model": "m", "point": i, "sram.size_kib": 64 << i, "status": "ok",
             "meets_constraints": True, "time_us": 100 / (i + 1) + 1, "energy_pj": 10.0 ** i,
             "sram_kib": 64 << i} for i in range(6)]


def test_log_axes_by_default_and_by_toggle(qtbot):
    view = ParetoView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    rows = _rows()
    view.set_rows(rows, ["sram.size_kib"], {"sram.size_kib": 64})
    assert not view.log_x.isChecked() and view.log_y.isChecked()
    axis = view.plot.getPlotItem().getAxis("left")
    assert axis.logMode
    bounds = view.scatter.boundingRect()  # drawn at log10 of the energies: 0..5
    assert (bounds.top(), bounds.bottom()) == (0.0, 5.0)
    assert (bounds.left(), bounds.right()) == (100 / 6 + 1, 101.0)
    # every point is on the front (faster ones cost more energy); click one on the log axis
    assert len(view.front_rows) == 6
    view.plot.getPlotItem().getViewBox().autoRange()
    qtbot.wait(50)
    with qtbot.waitSignal(view.sig_point_clicked, timeout=5000) as clicked:
        qtbot.mouseClick(view.plot.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=view.point_position(rows[3]))
    assert clicked.args[0] is rows[3]
    view.log_y.setChecked(False)  # the user's toggle: linear energies
    bounds = view.scatter.boundingRect()
    assert (bounds.top(), bounds.bottom()) == (1.0, 1e5) and not axis.logMode
    view.x_box.setCurrentText("sram_kib")  # a new axis takes its default: 64..2048 KiB, log
    assert view.log_x.isChecked() and view.log_y.isChecked()
    assert abs(view.scatter.boundingRect().left() - 6 * math.log10(2)) < 1e-12  # 64 KiB
    # sensitivity: SRAM (a parameter over five octaves) against energy, both log
    view.sens_param.setCurrentText("sram.size_kib")
    view.sens_metric.setCurrentText("energy_pj")
    assert view.sens_log_x.isChecked() and view.sens_log_y.isChecked()
    plot = view.sens_plot.getPlotItem()
    assert plot.getAxis("bottom").logMode and plot.getAxis("left").logMode
    view.sens_metric.setCurrentText("time_us")  # under a decade: linear
    assert not view.sens_log_y.isChecked() and not plot.getAxis("left").logMode


def test_a_bad_or_unreachable_dask_address_is_a_one_line_banner(window, qtbot, tmp_path,
                                                                 monkeypatch):
    model = flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("{model}", str(model)))
    dock, controller = window.sweep, window.sweep_controller
    dock.dask_edit.setText("head")  # no port
    assert "border" in dock.dask_edit.styleSheet()
    controller.run_spec(str(spec))
    assert not window.jobs.is_running("sweep-run")
    assert dock.banner.text() == ("Dask address 'head': expected HOST:PORT or SCHEME://HOST:PORT, "
                                  "e.g. tcp://head:8786")
    monkeypatch.setattr(sweep_dock, "DASK_TIMEOUT", 1.0)
    dock.dask_edit.setText("tcp://127.0.0.1:9")  # the discard port: nothing listens
    assert dock.dask_edit.styleSheet() == ""
    controller.run_spec(str(spec))
    qtbot.waitUntil(lambda: not window.jobs.is_running("sweep-run"), timeout=60000)
    text = dock.banner.text()
    assert text.startswith("cannot reach the Dask scheduler at tcp://127.0.0.1:9") and "\n" not in text
    assert dock.run_button.isEnabled() and window.isVisible()


def test_run_a_sweep_from_the_app_on_a_dask_cluster(window, qtbot, tmp_path):
    from distributed import LocalCluster

    model = flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("{model}", str(model)))
    want = run_sweep(load_spec(spec), tmp_path / "serial", SerialExecutor())
    dock, controller = window.sweep, window.sweep_controller
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        dock.dask_edit.setText(cluster.scheduler_address)
        controller.run_spec(str(spec))
        qtbot.waitUntil(lambda: not window.jobs.is_running("sweep-run"), timeout=120000)
    assert not dock.banner.isVisibleTo(dock), dock.banner.text()
    got = {r["point"]: (r["key"], r["cycles"], r["energy_pj"]) for r in controller.sweep.rows}
    assert got == {r["point"]: (r["key"], r["cycles"], r["energy_pj"]) for r in want.rows}
    assert len(dock.view.shown) == 4
