"""Opening a workspace whose flow snapshot has a million lines: how long the GUI stalls while its
dispatch index is built (first open) and read back from the cache (reopen).

    QT_QPA_PLATFORM=offscreen python benchmarks/big_workspace_open.py [WORKSPACE] [--lines N]
        [--seconds S] [--code DIR] [--job-only] [--stacks]

WORKSPACE is a compiled workspace folder; it is copied into a temporary folder and only the copy is
opened (the original is never changed). Without it, light_resnet50 from ONNX's test zoo is compiled
into a temporary workspace and its flow snapshot grown to about --lines lines (default 1,000,000):
the module's body repeated with every symbol renamed per copy, so that it still parses and indexes.

Two app processes open the copy in turn, each in an offscreen MainWindow with a private HOME,
XDG_CACHE_HOME and NPU_STUDIO_HOME (the user's own cache is never touched):
  * cold:   the dispatch-index cache is empty, the index is built;
  * reopen: the cache the cold run left is read back.
Each reports the longest gap of a 5 ms event-loop timer (a GUI stall) and every gap over 100 ms with
the time since open (and the longest before and after the index job's result reached the GUI
thread: the job's stalls, then the views'), the seconds until that result arrived
(Studio._index_done), until the session had it (Studio.sig_index_finished)
and until the dispatch table held its rows, and the GUI-thread time spent in DispatchTable.set_index
(the table's own fill, not the index job). While the loop stalls over 0.3 s a sampler records where
the GUI thread is (printed with --stacks). --code DIR measures another checkout's npu_studio (the
"before" figures: --code /path/to/main). --job-only times the index job alone (no window: cold, then
from the cache) with the longest gap of a 2 ms ticker thread, i.e. how long it keeps the GIL.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def repeated_module(text: str, lines: int) -> str:
    """About `lines` lines of MLIR that parse: the module's body repeated, every symbol of copy i
    renamed @c<i>_name (the first copy keeps its names: the module's attributes refer to them)."""
    src = text.split("\n")
    top = next(i for i, line in enumerate(src) if line.startswith("module "))
    close = max(i for i, line in enumerate(src) if line.startswith("} loc(") or line == "}")
    body, tail = "\n".join(src[top + 1:close]), src[close:]
    out, copy = src[:top + 1], 0
    while copy == 0 or len(out) + body.count("\n") + 1 + len(tail) <= lines:
        renamed = body if copy == 0 else re.sub(r"@([\w$.]+)", lambda m: f"@c{copy}_{m.group(1)}", body)
        out.extend(renamed.split("\n"))
        copy += 1
    return "\n".join(out + tail)


def make_workspace(lines: int, into: Path) -> Path:
    """light_resnet50 (ONNX's test zoo) compiled into `into`, its flow snapshot grown to about `lines` lines."""
    sys.path.insert(0, str(ROOT))
    import onnx

    from npu_studio.core.workspace.workspace import compile_model

    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
    ws = compile_model(model, into)
    flow = ws.snapshot_path("flow")
    flow.write_text(repeated_module(flow.read_text(), lines))
    return into


def measure(workspace: Path, seconds: float, stacks: bool) -> dict:
    """In the child process: open `workspace` in a MainWindow and watch the event loop."""
    import threading
    import traceback

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6 import QtCore, QtWidgets

    app = QtWidgets.QApplication([])
    from npu_studio.ui.dispatches.table import DispatchTable
    from npu_studio.ui.gui_gc import GuiThreadCollector
    from npu_studio.ui.main_window import MainWindow
    from npu_studio.ui.studio import Studio

    app.collector = GuiThreadCollector(app)
    fill = {"seconds": 0.0, "rows": 0}
    set_index = DispatchTable.set_index

    def timed_set_index(self, index, *args, **kwargs):
        t = time.perf_counter()
        set_index(self, index, *args, **kwargs)
        fill["seconds"] += time.perf_counter() - t

    DispatchTable.set_index = timed_set_index
    marks: dict[str, float] = {}
    index_done = Studio._index_done

    def timed_index_done(self, result, gen):  # the job's result reaches the GUI thread
        marks.setdefault("result", time.perf_counter())
        index_done(self, result, gen)

    Studio._index_done = timed_index_done
    settings = QtCore.QSettings(str(Path(os.environ["HOME"]) / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    w.resize(1280, 800)
    w.show()
    app.processEvents()
    w.studio.sig_index_finished.connect(lambda: marks.setdefault("index", time.perf_counter()))

    gaps: list[tuple[float, float]] = []
    last = [time.perf_counter()]
    t0 = [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        if now - last[0] > 0.1:
            gaps.append((round(last[0] - t0[0], 2), round(now - last[0], 3)))
        last[0] = now
        if "table" not in marks and w.dispatch_table.rowCount() > 0:
            marks["table"] = now
            fill["rows"] = w.dispatch_table.rowCount()

    timer = QtCore.QTimer(interval=5, timeout=tick)
    timer.start()
    samples: list[str] = []
    main = threading.main_thread().ident

    def sampler():
        while True:
            time.sleep(0.05)
            if time.perf_counter() - last[0] > 0.3:
                frame = sys._current_frames().get(main)
                if frame is not None:
                    samples.append("".join(traceback.format_stack(frame, limit=6)[-3:]))

    threading.Thread(target=sampler, daemon=True).start()
    t0[0] = last[0] = time.perf_counter()
    end = t0[0] + seconds

    def done_yet():  # the app's own event loop runs until the table has been filled 2 s ago
        now = time.perf_counter()
        if now > end or ("table" in marks and now > marks["table"] + 2):
            app.quit()

    QtCore.QTimer(interval=100, timeout=done_yet, parent=app).start()
    QtCore.QTimer.singleShot(0, lambda: w.open_path(workspace))
    app.exec()
    longest = max((g for _, g in gaps), default=max(0.0, time.perf_counter() - last[0]))
    index_at = marks.get("result", float("inf")) - t0[0]
    result = {
        "longest_stall_s": round(longest, 3),
        # before the index job's result reached the GUI thread (open, text streaming in, the job) / after
        # it (the session and views taking the index: table fill and the like)
        "longest_stall_until_index_s": max((g for at, g in gaps if at + g < index_at), default=0.0),
        "longest_stall_after_index_s": max((g for at, g in gaps if at + g >= index_at), default=0.0),
        "stalls_over_100ms": gaps,
        "index_result_s": round(marks["result"] - t0[0], 2) if "result" in marks else None,
        "index_s": round(marks["index"] - t0[0], 2) if "index" in marks else None,
        "table_filled_s": round(marks["table"] - t0[0], 2) if "table" in marks else None,
        "rows": fill["rows"],
        "table_set_index_s": round(fill["seconds"], 3),
    }
    if stacks:
        distinct = list(dict.fromkeys(samples))
        result["stall_stacks"] = distinct[:8]
    return result


def measure_job(workspace: Path) -> dict:
    """In the child process: the index job alone (Studio.start_indexing's build of the flow snapshot,
    no window), cold then from the cache, and the longest gap of a 2 ms ticker thread meanwhile: how
    long the job keeps the GIL from the GUI thread. Automatic collection is off, as in the app."""
    import gc
    import threading

    gc.disable()
    from npu_studio.core.workspace.index_cache import cached_index

    try:
        from npu_studio.core.ir.dispatch_index.child import build_index
    except ImportError:  # a checkout from before the child process: in-process, as its app did
        from npu_studio.core.ir.dispatch_index import index_file as build_index
    flow = max(workspace.glob("phases/*flow.mlir"), key=lambda p: p.stat().st_size)
    result = {}
    for run in ("cold", "reopen"):
        gaps, stop = [0.0], threading.Event()

        def tick():
            last = time.perf_counter()
            while not stop.is_set():
                time.sleep(0.002)
                now = time.perf_counter()
                gaps[0], last = max(gaps[0], now - last), now

        ticker = threading.Thread(target=tick)
        ticker.start()
        t = time.perf_counter()
        index = cached_index(flow, "flow", build_index)
        result[run] = {"seconds": round(time.perf_counter() - t, 2), "longest_gil_gap_ms": round(gaps[0] * 1000)}
        stop.set()
        ticker.join()
        del index  # freed after the ticker stops: freeing a million objects is one long call (~0.2 s)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, help="a compiled workspace to copy and open")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=120.0, help="give up waiting for the table after this")
    ap.add_argument("--code", type=Path, default=ROOT, help="checkout whose npu_studio is measured")
    ap.add_argument("--stacks", action="store_true", help="print where the GUI thread was during stalls")
    ap.add_argument("--job-only", action="store_true", help="time the index job alone, without a window")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process's run
    args = ap.parse_args()
    if args.measure is not None and args.job_only:
        sys.path.insert(0, str(args.code))
        print(json.dumps(measure_job(args.measure)), flush=True)
        return 0
    if args.measure is not None:
        sys.path.insert(0, str(args.code))
        print(json.dumps(measure(args.measure, args.seconds, args.stacks)), flush=True)
        os._exit(0)  # a job may still run (the table never filled): no teardown of its thread

    with tempfile.TemporaryDirectory(prefix="big-open-") as tmp:
        tmp = Path(tmp)
        home = tmp / "home"
        env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                   XDG_CONFIG_HOME=str(home / ".config"), NPU_STUDIO_HOME=str(home / "studio"),
                   QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
                   PYTHONPATH=str(args.code))
        home.mkdir()
        ws = tmp / "ws"
        if args.workspace is not None:
            shutil.copytree(args.workspace, ws, symlinks=True)
        else:
            make_workspace(args.lines, ws)
        flow = max(ws.glob("phases/*flow.mlir"), key=lambda p: p.stat().st_size)
        with open(flow, "rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        print(f"workspace {ws} (flow snapshot {lines:,} lines, {flow.stat().st_size / 1e6:.0f} MB); "
              f"code {args.code}")
        for run in ("cold", "reopen") if not args.job_only else ("index job alone",):
            cmd = [sys.executable, __file__, "--measure", str(ws), "--seconds", str(args.seconds),
                   "--code", str(args.code)] + (["--stacks"] if args.stacks else []) + \
                (["--job-only"] if args.job_only else [])
            t = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{run}: failed\n{done.stderr[-3000:]}")
                return 1
            result = json.loads(done.stdout.strip().splitlines()[-1])
            stacks = result.pop("stall_stacks", [])
            print(f"{run} ({time.perf_counter() - t:.1f} s in all): {json.dumps(result)}")
            for s in stacks:
                print("  GUI thread during a stall:\n" + s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
