"""Design-space sweep speed (issue 30); writes its section of docs/PERFORMANCE.md.

    .venv/bin/python benchmarks/sweep.py   (about 3 minutes on a quiet 2-core machine; make bench runs it too)

- light resnet50 over 200 points (SRAM 128 KiB-2 MiB x DRAM 4-512 bytes/cycle x array
  8x8-128x128), in this process: points per second on one core;
- bandwidth only (SRAM and array fixed), with tiles chosen for each point and with
  `tiles_for = "base-bandwidth"`; bandwidth x clock; clock only;
- speed-up from 1 to 2 workers on 64 Latin-hypercube samples, local pool and Dask LocalCluster
  (worker processes);
- redrawing the Pareto view for 100,000 points (front, knee and scatter; best of 3).
One run each; wall and CPU (user + sys) times, and the load average, since the shared
machine's other work inflates the wall times.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu"))
sys.path.insert(0, str(HERE))

from flowgen import flow_snapshot, zoo_model  # noqa: E402
from perf_doc import timed, write_section  # noqa: E402

from npu_studio.core.sweep import evaluate  # noqa: E402
from npu_studio.core.sweep.executors import DaskExecutor, PoolExecutor, SerialExecutor  # noqa: E402
from npu_studio.core.sweep.run import run_sweep  # noqa: E402
from npu_studio.core.sweep.spec import load_spec  # noqa: E402

FULL = """
target = "default"
models = ["{model}"]
[parameters]
"sram.size_kib" = {{ log2 = [128, 2048] }}
"dram.bytes_per_cycle" = {{ log2 = [4, 512] }}
"mac_array.rows+mac_array.cols" = {{ log2 = [8, 128] }}
"""
SUBSET = FULL + "\n[sampling]\nmethod = \"latin-hypercube\"\npoints = 64\nseed = 3\n"
BANDWIDTH = """
{tiles}
target = "default"
models = ["{model}"]
[parameters]
"dram.bytes_per_cycle" = [4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
"""
BANDWIDTH_CLOCK = """
target = "default"
models = ["{model}"]
[parameters]
"dram.bytes_per_cycle" = {{ log2 = [4, 512] }}
"clock_mhz" = [500, 750, 1000, 1250, 1500]
"""
CLOCK = """
target = "default"
models = ["{model}"]
[parameters]
"clock_mhz" = {{ range = [200, 2000, 50] }}
"""


def _spec(tmp: Path, name: str, text: str, model: Path, **fmt):
    path = tmp / f"{name}.toml"
    path.write_text(text.format(model=model, **fmt))
    return load_spec(path)


def _time(spec, tmp: Path, executor, name: str) -> tuple[int, float, float]:
    """(points, wall seconds, CPU seconds of this process and its finished children)."""
    evaluate.clear_memo()
    result, wall, cpu = timed(lambda: run_sweep(spec, tmp / name, executor))
    return len(result.rows), wall, cpu


def _process_cpu() -> float:
    """CPU seconds of the process it runs in (a Dask worker's)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def redraw_100k() -> tuple[float, float, float]:
    """(front and knee alone, whole redraw with painting, its CPU time) in ms, best of 3."""
    import numpy as np
    from PySide6 import QtWidgets

    from npu_studio.core.sweep.analysis import pareto_mask
    from npu_studio.ui.sweep.pareto import ParetoView

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    rng = np.random.default_rng(0)
    t, e = rng.lognormal(0, 1, 100_000), rng.lognormal(0, 1, 100_000)
    rows = [{"model": "m", "point": i, "p": i % 7, "status": "ok", "meets_constraints": True,
             "time_us": float(a), "energy_pj": float(b)} for i, (a, b) in enumerate(zip(t, e))]
    view = ParetoView()
    view.resize(900, 600)
    view.show()
    view.set_rows(rows, ["p"], {})
    app.processEvents()
    fronts, draws, cpus = [], [], []
    for _ in range(3):
        s = time.perf_counter()
        pareto_mask(np.column_stack([t, e]))
        fronts.append(time.perf_counter() - s)
        s, c = time.perf_counter(), time.process_time()
        view.redraw()
        view.plot.viewport().repaint()
        draws.append(time.perf_counter() - s)
        cpus.append(time.process_time() - c)
    view.close()
    return 1000 * min(fronts), 1000 * min(draws), 1000 * min(cpus)


def _row(label: str, n: int, wall: float, cpu: float) -> str:
    return f"| {label} | {n} | {wall:.1f} | {cpu:.1f} | {n / wall:.2f} | **{n / cpu:.2f}** |"


def main() -> None:
    started = time.perf_counter()
    model = flow_snapshot(zoo_model("resnet50"))
    lines, loads = [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        full = _spec(tmp, "full", FULL, model)
        n, wall, cpu = _time(full, tmp, SerialExecutor(), "full")
        plans = evaluate.stats["plans"]
        lines.append(_row("200 points, SRAM x bandwidth x array", n, wall, cpu))
        for tiles, label in (("", "tiles for each point"),
                             ('tiles_for = "base-bandwidth"', "tiles for the base bandwidth")):
            spec = _spec(tmp, "bw", BANDWIDTH, model, tiles=tiles)
            lines.append(_row(f"bandwidth only, {label}",
                              *_time(spec, tmp, SerialExecutor(), "bw" + str(len(tiles)))))
        spec = _spec(tmp, "bwclock", BANDWIDTH_CLOCK, model)
        lines.append(_row("bandwidth x clock, tiles for each point",
                          *_time(spec, tmp, SerialExecutor(), "bwclock")))
        spec = _spec(tmp, "clock", CLOCK, model)
        lines.append(_row("clock only", *_time(spec, tmp, SerialExecutor(), "clock")))
        loads.append(os.getloadavg()[0])
        sub = _spec(tmp, "subset", SUBSET, model)
        speed = []
        for label, make in (("local pool", PoolExecutor), ("Dask LocalCluster", None)):
            runs = []
            for workers in (1, 2):
                if make is not None:
                    runs.append(_time(sub, tmp, make(workers), f"{label}{workers}"))
                else:
                    from distributed import Client, LocalCluster
                    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, Client(cluster) as client:
                        before = sum(client.run(_process_cpu).values())
                        n, wall, cpu = _time(sub, tmp, DaskExecutor(client), f"dask{workers}")
                        cpu += sum(client.run(_process_cpu).values()) - before  # the workers'
                        runs.append((n, wall, cpu))
            (n, w1, c1), (_, w2, c2) = runs
            speed.append(f"| {label} | {n} | {w1:.1f} | {c1:.1f} | {w2:.1f} | {c2:.1f} | "
                         f"**{w1 / w2:.2f}** |")
        loads.append(os.getloadavg()[0])
    front_ms, draw_ms, draw_cpu_ms = redraw_100k()
    body = "\n".join([
        "## Design-space sweep (issue 30)",
        "",
        f"`benchmarks/sweep.py` ({time.perf_counter() - started:.0f} s in all here), one run, "
        "light resnet50 "
        f"on the default target's base; the NPU pipeline ran {plans} times for the 200 points (one "
        "plan per point: the tiles depend on SRAM, array and bandwidth; its parse, legality and "
        "tile-search steps are memoised, docs/sweep.md). Points per second per core from the "
        "CPU time (user + sys) and from the wall time, one worker in the process:",
        "",
        "| sweep | points | wall (s) | CPU (s) | points/s (wall) | **points/s/core (CPU)** |",
        "|---|---|---|---|---|---|",
        *lines,
        "",
        "Speed-up from 1 to 2 workers, 64 Latin-hypercube samples of the same ranges, the distinct "
        "ones run; CPU of this process and its worker "
        "processes. The pool's times include starting its workers (spawn, imports), the Dask "
        "ones not (the cluster is up before the sweep starts):",
        "",
        "| executor | points | 1 worker wall (s) | CPU (s) | 2 workers wall (s) | CPU (s) | "
        "**speed-up (wall)** |",
        "|---|---|---|---|---|---|---|",
        *speed,
        "",
        f"Pareto view of 100,000 points: front and knee {front_ms:.0f} ms, the whole redraw "
        f"(front, knee, scatter, paint) **{draw_ms:.0f} ms**, {draw_cpu_ms:.0f} ms of CPU "
        "(best of 3, offscreen).",
        "",
        "Load average (1 min) at the start, after the single-worker runs and after the speed-ups: "
        + ", ".join(f"{x:.1f}" for x in loads) + " on 2 cores. Above 2, other processes share the "
        "cores: wall times and the speed-ups measure that contention; the CPU times do not.",
    ])
    write_section("sweep-bench", body)
    print(body)


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    main()
