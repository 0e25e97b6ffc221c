"""The window over a working day: reopening resnet50, a cold start to the restored workspace, schedule frames.

1. Reopen: resnet50 from the light zoo, compiled once into a workspace; then opened again in a
   window as File > Open does (its content hash unchanged), timed to a usable window: the phase
   text on show and the dispatch indexes in (`sig_index_finished`). The job log must hold no compile.
2. Cold start: a new process with settings whose last session is that workspace, as the app starts
   (app.py: the window paints, then `restore_last_after_paint` restores it), timed from the launch
   to the first paint and to the restored phase text, wall and the process's CPU seconds, offscreen.
3. Schedule frames at the readable row height (16 px): the 100,000-task program of
   benchmarks/schedule_chart.py in a dock of the size it has in a 1280x800 window; zoom and pan
   frames, each to the end of the synchronous repaint.

Writes its section of docs/PERFORMANCE.md (window-session-bench markers).

    QT_QPA_PLATFORM=offscreen python benchmarks/window_session.py [--workspace DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_doc import write_section  # noqa: E402
from PySide6 import QtCore, QtWidgets  # noqa: E402

MARKER = "restored window shown"
# The app's own start (app.py): the window is shown and paints first, the last workspace is restored
# right after that first paint. The child reports both moments (epoch seconds) and its CPU seconds then.
CHILD = f"""
import os, sys, time
from PySide6 import QtCore, QtWidgets
app = QtWidgets.QApplication([])
from npu_studio.ui.main_window import MainWindow
w = MainWindow(QtCore.QSettings(sys.argv[1], QtCore.QSettings.Format.IniFormat))
marks = {{}}
def cpu():
    t = os.times()
    return t.user + t.system

class FirstPaint(QtCore.QObject):
    def eventFilter(self, obj, event):
        if event.type() == QtCore.QEvent.Type.Paint and "paint" not in marks:
            marks["paint"] = (time.time(), cpu())
        return False

first = FirstPaint()
app.installEventFilter(first)
w.show()
restoring = w.opener.restore_last_after_paint(w.settings)
def poll():
    if restoring and (w.workspace is None or w.current_phase is None):
        return
    marks["restored"] = (time.time(), cpu())
    print("{MARKER}" if restoring else "empty window shown", *marks["paint"], *marks["restored"], flush=True)
    w.session.drafts.clear(); w.jobs.stop_all(); app.quit()
timer = QtCore.QTimer(interval=2, timeout=poll)
timer.start()
app.exec()
"""


def resnet50() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


def reopen(app, model: Path, root: Path, runs: int = 3) -> dict:
    from npu_studio.ui.main_window import MainWindow

    times, shown, compiles = [], [], 0
    for i in range(runs):
        settings = QtCore.QSettings(str(root.parent / f"reopen-{i}.ini"), QtCore.QSettings.Format.IniFormat)
        w = MainWindow(settings)
        w.show()
        app.processEvents()
        done = []
        w.sig_index_finished.connect(lambda: done.append(time.perf_counter()))
        t = time.perf_counter()
        w.open_path(model, root)
        shown.append(time.perf_counter() - t)
        while not done:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
        times.append(done[0] - t)
        compiles += w.jobs.history.count("compile")
        w.session.drafts.clear()
        w.jobs.stop_all()
        w.close()
    # The first reopen may index (an empty index cache); the later ones find every index cached.
    return {"first_s": times[0], "usable_s": statistics.median(times[1:]), "text_s": statistics.median(shown),
            "compiles": compiles}


def cold_start(root: Path | None, folder: Path, runs: int = 5) -> dict:
    """Medians from launch to the first painted window and to the restored workspace on show (phase
    text in the IR view), wall and CPU seconds of the new process; for None, an empty window."""
    settings = folder / ("restart.ini" if root is not None else "empty.ini")
    s = QtCore.QSettings(str(settings), QtCore.QSettings.Format.IniFormat)
    if root is not None:
        s.setValue("session/workspace", str(root))
        s.setValue("session/phase", "flow")
    s.sync()
    marker = MARKER if root is not None else "empty window shown"
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    rows = []
    for _ in range(runs):
        t = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, str(settings)], capture_output=True, text=True,
                             env=env, timeout=120).stdout
        if marker not in out:
            raise RuntimeError(f"the restart did not restore {root}: {out!r}")
        paint, paint_cpu, restored, restored_cpu = map(float, out.split(marker)[1].split()[:4])
        rows.append((paint - t, paint_cpu, restored - t, restored_cpu))
    first, first_cpu, restored, restored_cpu = (statistics.median(col) for col in zip(*rows))
    return {"first_s": first, "first_cpu": first_cpu, "restored_s": restored, "restored_cpu": restored_cpu}


BARE = """
import os, time
from PySide6 import QtCore, QtWidgets
app = QtWidgets.QApplication([])
w = QtWidgets.QMainWindow()
w.resize(1280, 800)
class FirstPaint(QtCore.QObject):
    def eventFilter(self, obj, event):
        if event.type() == QtCore.QEvent.Type.Paint:
            t = os.times()
            print("painted", time.time(), t.user + t.system, flush=True)
            app.quit()
        return False
first = FirstPaint()
app.installEventFilter(first)
w.show()
app.exec()
"""


def bare_window(runs: int = 5) -> dict:
    """Python and PySide6 alone: launch to the first paint of an empty QMainWindow (the floor)."""
    rows = []
    for _ in range(runs):
        t = time.time()
        out = subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, QT_QPA_PLATFORM="offscreen")).stdout
        paint, cpu = map(float, out.split("painted")[1].split()[:2])
        rows.append((paint - t, cpu))
    return {"first_s": statistics.median(r[0] for r in rows), "first_cpu": statistics.median(r[1] for r in rows)}


def schedule_frames(app) -> dict:
    from schedule_chart import big_program, frame

    from npu_studio.core.npu.report.schedule_model import simulate_run
    from npu_studio.ui.schedule.dock import ScheduleDock

    run = simulate_run(big_program())
    dock = ScheduleDock()
    dock.resize(1280, 380)  # its size in a 1280x800 window with every dock open
    dock.show()
    dock.show_run(run.model)
    app.processEvents()
    dock.chart.view.viewport().repaint()
    total = float(run.model.totals.cycles)
    frames, lo, hi = [], 0.0, total
    for _ in range(12):
        mid, half = (lo + hi) / 2, (hi - lo) / 3
        lo, hi = mid - half, mid + half
        frames.append(frame(dock, lo, hi))
    width = total / 20
    for i in range(40):
        frames.append(frame(dock, i * width / 2, i * width / 2 + width))
    rows = dock.chart.row_pixels()
    dock.close()
    return {"tasks": len(run.program.tasks), "row_px": rows, "median_ms": statistics.median(frames),
            "max_ms": max(frames)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--workspace", type=Path, help="a resnet50 workspace compiled before (else compiled now)")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    model = resnet50()
    with tempfile.TemporaryDirectory(prefix="window-bench-") as tmp:
        os.environ["NPU_STUDIO_CONFIG"] = str(Path(tmp) / "config")
        os.environ["NPU_STUDIO_HOME"] = str(Path(tmp) / "workspaces")  # an empty index cache beside it
        root = args.workspace or Path(tmp) / "ws"
        if args.workspace is None:
            from npu_studio.core.workspace.workspace import compile_model

            t = time.perf_counter()
            compile_model(model, root)
            compile_s = time.perf_counter() - t
        else:
            compile_s = None
        r = reopen(app, model, root, max(args.runs, 2))
        cold = cold_start(root, Path(tmp))
        empty = cold_start(None, Path(tmp))
        bare = bare_window()
        f = schedule_frames(app)
    compiled = f"{compile_s:.1f} s" if compile_s is not None else "(compiled before)"
    body = f"""## Window sessions: reopen, restart, schedule frames (issue 24, `benchmarks/window_session.py`)

One run on the shared 2-core machine (load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end),
offscreen. CPU seconds are the new process's own (user + system), which the load does not inflate.

| what | figure | target |
|---|---|---|
| reopen resnet50 (unchanged model, File > Open) to its phase text on show | {r['text_s']:.2f} s | |
| reopen resnet50 to a usable window (dispatch indexes in), index cache filled | {r['usable_s']:.2f} s | at most 1 s |
| the same, first reopen (index cache empty: every phase indexed) | {r['first_s']:.2f} s | |
| compiles started by those reopens (job log) | {r['compiles']} | 0 |
| full compile of the same model, for scale | {compiled} | |
| cold start to the first window (launch to its first paint, new process): wall / CPU | {cold['first_s']:.2f} / {cold['first_cpu']:.2f} s | at most 0.5 s |
| cold start to the restored workspace on show (its phase text): wall / CPU | {cold['restored_s']:.2f} / {cold['restored_cpu']:.2f} s | |
| cold start to an empty window, same run (for scale: the load of the machine): wall / CPU | {empty['first_s']:.2f} / {empty['first_cpu']:.2f} s | |
| Python and PySide6 alone to a painted empty QMainWindow, same run: wall / CPU | {bare['first_s']:.2f} / {bare['first_cpu']:.2f} s | |
| schedule frame, {f['tasks']:,} tasks, rows {f['row_px']:.1f} px apart, dock 1280x380: median / worst | {f['median_ms']:.1f} / {f['max_ms']:.1f} ms | under 16 ms |

The reopen reads the model's content hash and the manifest, shows the phase text, then takes the
dispatch indexes from the index cache (filled by the app's own indexing after every compile; a
workspace compiled outside the app is indexed once, on its first reopen), and only then runs the
NPU pipeline, so the two do not compete for the one Python process. At a cold start the window
paints first (the workbench, "reopening NAME…") and the workspace is restored right after that
first paint; IREE's bindings, pyqtgraph and the linalg op DSL load only when a view needs them
(a sweep, a plot, an index, the NPU pipeline), not before the first window. The frame
row is the 100,000-task chart at the readable row height, with the machine shared. Under a high
load the wall figures include waiting for a core (compare the bare PySide6 row's wall and CPU);
the CPU seconds are the ones to compare between runs.
"""
    write_section("window-session-bench", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
