"""Schedule dock: frame times with 100,000 tasks, and Apply -> updated chart on resnet50.

1. A chain of tiled matmuls with at least 100,000 tasks (the simulator
   tests' synthetic program, built with the real scheduler and memory
   planner) is simulated and shown in a ScheduleDock in an offscreen
   window; then zoom steps (in and out) and pan steps are timed, each from
   the range change until the synchronous repaint of the view is done.
2. resnet50 from the light zoo: the time from applying a target edit (SRAM
   halved) to the updated chart: the NPU pipeline on the flow snapshot, the
   simulation, the chart's arrays and the repaint, which is what the app
   does after Apply in the target editor.

Writes its section of docs/PERFORMANCE.md (schedule-chart-bench markers).

    QT_QPA_PLATFORM=offscreen python benchmarks/schedule_chart.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu" / "sim"))

from perf_doc import write_section  # noqa: E402
from PySide6 import QtWidgets  # noqa: E402

from npu_studio.core.npu.report.schedule_model import simulate_run  # noqa: E402
from npu_studio.core.npu.target.target import RESOURCES, load_target, parse_target  # noqa: E402
from npu_studio.ui.schedule.dock import ScheduleDock  # noqa: E402


def frame(dock: ScheduleDock, x0: float, x1: float) -> float:
    t = time.perf_counter()
    dock.chart.engines.setXRange(x0, x1, padding=0)
    dock.chart.view.viewport().repaint()
    return (time.perf_counter() - t) * 1000


def big_program():
    import sim_synth

    target = load_target()
    layers = [("matmul", (512, 512, 512), (16, 16, 512))] * 100  # 1,024 tiles each
    return sim_synth.program(layers, target)


def frames_100k(app) -> dict:
    program = big_program()
    t = time.perf_counter()
    run = simulate_run(program)
    sim_s = time.perf_counter() - t
    dock = ScheduleDock()
    dock.resize(1600, 800)
    dock.show()
    t = time.perf_counter()
    dock.show_run(run.model)
    app.processEvents()
    dock.chart.view.viewport().repaint()
    show_s = time.perf_counter() - t
    total = float(run.model.totals.cycles)
    zoom, pan = [], []
    lo, hi = 0.0, total
    for _ in range(12):  # zoom in towards the middle, then back out
        mid, half = (lo + hi) / 2, (hi - lo) / 3
        lo, hi = mid - half, mid + half
        zoom.append(frame(dock, lo, hi))
    for _ in range(12):
        mid, half = (lo + hi) / 2, (hi - lo) * 0.75
        lo, hi = mid - half, mid + half
        zoom.append(frame(dock, lo, hi))
    width = total / 20
    for i in range(40):
        pan.append(frame(dock, i * width / 2, i * width / 2 + width))
    dock.close()
    return {"tasks": len(program.tasks), "bars": len(run.model.bar_task), "simulate_s": sim_s,
            "show_s": show_s, "zoom": zoom, "pan": pan}


def apply_resnet50(app) -> dict:
    import onnx

    from npu_studio.core.npu.plan.passes import run_npu_pipeline
    from npu_studio.core.workspace.workspace import compile_model

    zoo = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
    ws = compile_model(zoo, Path(tempfile.mkdtemp(prefix="sched-bench-")) / "ws")
    flow = ws.snapshot_path("flow")
    text = (RESOURCES / "default.toml").read_text()
    before = load_target()
    halved = parse_target(text.replace(f"size_kib = {before.sram_bytes // 1024}",
                                       f"size_kib = {before.sram_bytes // 2048}"), "halved.toml")
    assert halved.sram_bytes * 2 == before.sram_bytes, "SRAM key not found in default.toml"
    dock = ScheduleDock()
    dock.resize(1600, 800)
    dock.show()
    first = simulate_run(run_npu_pipeline(flow, before))
    dock.show_run(first.model)
    app.processEvents()
    t = time.perf_counter()
    program = run_npu_pipeline(flow, halved)
    t_npu = time.perf_counter() - t
    run = simulate_run(program)
    t_sim = time.perf_counter() - t - t_npu
    dock.show_run(run.model, first.model)
    app.processEvents()
    dock.chart.view.viewport().repaint()
    total = time.perf_counter() - t
    dock.close()
    return {"tasks": len(program.tasks), "npu_s": t_npu, "sim_s": t_sim, "total_s": total,
            "before": first.model.totals.cycles, "after": run.model.totals.cycles}


def main() -> None:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    big = frames_100k(app)
    res = apply_resnet50(app)
    z, p = big["zoom"], big["pan"]
    body = f"""## Schedule dock (`benchmarks/schedule_chart.py`)

100,000-task program ({big['tasks']:,} tasks, {big['bars']:,} bars), offscreen window 1600x800:

| measure | median | worst |
|---|---|---|
| zoom frame (range change to repainted view) | {statistics.median(z):.1f} ms | {max(z):.1f} ms |
| pan frame | {statistics.median(p):.1f} ms | {max(p):.1f} ms |

Aim: frames under 33 ms. Simulation plus the chart's arrays {big['simulate_s']:.2f} s (in the
background job); showing the run (building the plot items, first paint) {big['show_s']:.2f} s.

resnet50 (light zoo, {res['tasks']:,} tasks): Apply of a target edit (SRAM halved) to the
updated chart takes {res['total_s']:.2f} s: NPU pipeline {res['npu_s']:.2f} s, simulation
{res['sim_s']:.2f} s, the rest drawing. Total cycles {res['before']:,} -> {res['after']:,}.
"""
    write_section("schedule-chart-bench", body)
    print(body)


if __name__ == "__main__":
    main()
