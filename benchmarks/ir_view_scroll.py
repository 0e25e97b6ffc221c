"""IrView on a 100,000-line snapshot: time to first paint and scroll frames.

Builds a realistic flow-phase snapshot by repeating the dispatch of a real
IREE dump (module.6.flow.mlir, symbols renamed per copy, each with its
dense<"0x..."> constant), shows it in an IrView in an offscreen window with
one region per dispatch, then measures

  * first paint: from set_text() until the viewport's first paintEvent ends;
  * page-down frames: key press -> scroll -> highlight -> repaint done;
  * jump frames: goto(), mark_region() and scroll-bar jumps to random places;
  * the longest stall of the event loop while scrolling (the navigation index builds meanwhile);

and the same for a bare QPlainTextEdit on the same text in the same run (`--big 1000000` adds a
snapshot of a million lines).

Writes its section of docs/PERFORMANCE.md (between the ir-view-bench markers).

    QT_QPA_PLATFORM=offscreen python benchmarks/ir_view_scroll.py [--snapshot F]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import PySide6  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from npu_studio.ui.ir.ir_view import IrView, Region  # noqa: E402


def example_flow_snapshot() -> Path:
    """The bundled example's flow snapshot, compiled into a temporary workspace."""
    import tempfile

    from npu_studio.core.workspace.workspace import compile_model
    from npu_studio.resources import EXAMPLE_MODEL

    ws = compile_model(EXAMPLE_MODEL, Path(tempfile.mkdtemp(prefix="ir-view-bench-")) / "ws")
    return ws.snapshot_path("flow")
PERF_DOC = ROOT / "docs" / "PERFORMANCE.md"
LOAD = [0.0, 0.0]  # load average at the start and the end of the run
BEGIN, END = "<!-- ir-view-bench -->", "<!-- /ir-view-bench -->"


def build_snapshot(source: str, lines: int) -> tuple[str, list[tuple[int, int]]]:
    """About `lines` lines of MLIR and the (first, last) line of each dispatch."""
    src = source.split("\n")
    start = next(i for i, l in enumerate(src) if l.startswith("  flow.executable "))
    end = next(i for i in range(start, len(src)) if src[i] == "  } loc(#loc1)")
    const = next(l for l in src if l.startswith("  util.global private @__constant"))
    head, unit, tail = src[:start], src[start : end + 1] + [const], src[end + 2 :]
    name = re.search(r"@(\S+?) \{", src[start]).group(1)
    out = list(head)
    spans = []
    i = 0
    while len(out) + len(unit) + len(tail) <= lines:
        first = len(out) + 1
        block = "\n".join(unit).replace(name, f"{name}_{i}").replace(
            "@__constant_tensor", f"@__constant_{i}_tensor"
        )
        out.extend(block.split("\n"))
        spans.append((first, first + len(unit) - 2))
        i += 1
    out.extend(tail)
    return "\n".join(out), spans


class TimedView(IrView):
    paints = 0
    paint_end = 0.0
    coloured_end = None  # end of the first paint, since it was reset, with every line on it highlighted

    def paintEvent(self, event):  # noqa: N802
        super().paintEvent(event)
        self.paints += 1
        self.paint_end = time.perf_counter()
        first, last = self.visible_line_range()
        if self.coloured_end is None and all(self.highlighter.is_highlighted(n) for n in range(first - 1, last)):
            self.coloured_end = self.paint_end


class TimedBare(QtWidgets.QPlainTextEdit):
    """The baseline: Qt's own plain-text editor on the same text, no highlighting, no gutter."""

    paints = 0
    paint_end = 0.0

    def paintEvent(self, event):  # noqa: N802
        super().paintEvent(event)
        self.paints += 1
        self.paint_end = time.perf_counter()


class StallWatch:
    """The longest gap between ticks of a 5 ms timer: how long the event loop was blocked."""

    def __init__(self):
        self.timer = QtCore.QTimer(interval=5, timeout=self._tick)
        self.last = time.perf_counter()
        self.worst = 0.0

    def _tick(self):
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last)
        self.last = now

    def start(self):
        self.last, self.worst = time.perf_counter(), 0.0
        self.timer.start()


def wait_paint(app, view, before: int, timeout: float = 30.0) -> float:
    deadline = time.perf_counter() + timeout
    while view.paints == before:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        if time.perf_counter() > deadline:
            raise TimeoutError("no paint")
    return view.paint_end


IDLE_S = 0.033  # between two frames: a held key repeats 25 to 33 times a second (X's default is 25)


def frame(app, view, action) -> float:
    """Seconds from `action` (an input) to the end of the paint it causes, after IDLE_S of idle event
    loop (what the view does while idle, a user's held key gives it; a frame is timed from its input)."""
    idle_until = time.perf_counter() + IDLE_S
    app.processEvents()
    while time.perf_counter() < idle_until:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
    before = view.paints
    view.coloured_end = None
    t0 = time.perf_counter()
    action()
    painted = wait_paint(app, view, before) - t0
    coloured = painted
    if isinstance(view, TimedView):  # a far jump paints first and colours in a later frame
        deadline = time.perf_counter() + 5
        while view.coloured_end is None and time.perf_counter() < deadline:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        coloured = (view.coloured_end or float("inf")) - t0
    COLOURED.append(coloured)
    return painted


COLOURED: list[float] = []  # per frame: from its input to the end of the paint that shows its lines coloured


def goto_bare(view: QtWidgets.QPlainTextEdit, line: int) -> None:
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(line - 1))
    view.setTextCursor(cursor)
    view.centerCursor()


def run(text: str, spans: list, kind: str, pages: int = 300) -> dict:
    """One view (`kind` "ir" = IrView with the app's navigation, or "bare") on `text`."""
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    if not hasattr(app, "collector"):  # as app.py: cyclic garbage collected on the GUI thread only
        from npu_studio.ui.gui_gc import GuiThreadCollector

        app.collector = GuiThreadCollector(app)
    window = QtWidgets.QMainWindow()
    view = TimedView() if kind == "ir" else TimedBare()
    navigator = None
    if kind == "ir":
        from npu_studio.ui.ir.navigation import IrNavigator

        navigator = IrNavigator(view)
    else:
        view.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.FixedFont))
        view.setReadOnly(True)
    window.setCentralWidget(view)
    window.resize(1200, 900)
    window.show()
    QTest.qWaitForWindowExposed(window)
    app.processEvents()
    colors = [QtGui.QColor(c) for c in ("#4e79a7", "#f28e2b", "#59a14f", "#e15759")]
    regions = [Region(f"d{i}", a, b, colors[i % 4]) for i, (a, b) in enumerate(spans)]
    watch = StallWatch()

    before = view.paints
    t0 = time.perf_counter()
    if kind == "ir":
        view.set_text(text)
        view.set_regions(regions)
    else:
        view.setPlainText(text)
    t_set = time.perf_counter() - t0
    first_paint = wait_paint(app, view, before) - t0
    # IrView shows a big text a slice at a time (ui/ir/streaming.py): the time until every line is in, and
    # the longest the event loop waits meanwhile. The bare widget has it all at its first paint.
    watch.start()
    loaded = first_paint
    if kind == "ir":
        while view.stream.loading:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        loaded = time.perf_counter() - t0
    load_stall = watch.worst if kind == "ir" else first_paint
    watch.start()
    view.setFocus()
    down = QtCore.Qt.Key.Key_PageDown
    page_times = [frame(app, view, lambda: QTest.keyClick(view, down)) for _ in range(pages)]
    rng = random.Random(7)
    n = view.blockCount()
    jumps = []
    del COLOURED[:]
    for k in range(60):
        line = rng.randrange(1, n)
        if k % 3 == 0:
            jumps.append(frame(app, view, lambda: view.goto(line, 5) if kind == "ir" else goto_bare(view, line)))
        elif k % 3 == 1 and kind == "ir":
            key = rng.choice(regions).key
            jumps.append(frame(app, view, lambda: view.mark_region(key)))
        else:
            value = rng.randrange(0, view.verticalScrollBar().maximum())
            jumps.append(frame(app, view, lambda: view.verticalScrollBar().setValue(value)))
    index_ready = None
    if navigator is not None:
        deadline = time.perf_counter() + 600
        while navigator.index is None and time.perf_counter() < deadline:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
        index_ready = time.perf_counter() - t0
    watch.timer.stop()
    result = {
        "lines": view.blockCount(),
        "set_text": t_set,
        "first_paint": first_paint,
        "loaded": loaded,
        "load_stall": load_stall,
        "pages": page_times,
        "jumps": jumps,
        "jumps_coloured": list(COLOURED),
        "stall": watch.worst,
        "index": index_ready,
        "visible": (view.visible_line_range() if kind == "ir" else (0, 0)),
    }
    window.close()
    return result


def ms(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x >= 0.0095 else f"{x * 1000:.1f} ms"


def stats(xs: list[float]) -> tuple[float, float, float]:
    s = sorted(xs)
    return statistics.median(s), s[int(0.95 * (len(s) - 1))], s[-1]


def report(text: str, regions: int, big: tuple | None, ir: dict, bare: dict) -> str:
    first, last = ir["visible"]
    rows = []
    for label, key in (("first paint (text in memory to end of first paint)", "first_paint"),
                       ("every line in the document (IrView: a slice at a time)", "loaded"),
                       ("longest stall of the event loop while the text comes in (bare: its first paint)",
                        "load_stall")):
        rows.append(f"| {label} | {ms(ir[key])} | {ms(bare[key])} | {ir[key] / bare[key]:.1f} |")
    for label, key in (("page down", "pages"), ("jump (goto / mark_region / scroll bar)", "jumps")):
        a, b = stats(ir[key]), stats(bare[key])
        rows.append(f"| {label}, median of {len(ir[key])} | {ms(a[0])} | {ms(b[0])} | {a[0] / b[0]:.1f} |")
        rows.append(f"| {label}, 95th percentile | {ms(a[1])} | {ms(b[1])} | {a[1] / b[1]:.1f} |")
    a, b = stats(ir["jumps_coloured"]), stats(bare["jumps_coloured"])
    rows.append(f"| jump, until the lines on screen are coloured, median | {ms(a[0])} | {ms(b[0])} (no colours) | "
                f"{a[0] / b[0]:.1f} |")
    rows.append(f"| jump, until the lines on screen are coloured, 95th percentile | {ms(a[1])} | {ms(b[1])} | "
                f"{a[1] / b[1]:.1f} |")
    rows.append(f"| longest stall of the event loop while scrolling (index built meanwhile) | "
                f"{ms(ir['stall'])} | {ms(bare['stall'])} | |")
    lines = [
        BEGIN,
        "## IR view: load and scroll a 100,000-line snapshot, against a bare QPlainTextEdit",
        "",
        f"`benchmarks/ir_view_scroll.py`: {ir['lines']:,} lines ({len(text) / 1e6:.1f} MB), built from a real "
        f"flow-phase dispatch repeated with renamed symbols; {regions:,} dispatch regions; 1200x900 offscreen "
        f"window ({last - first + 1} lines visible); Python {platform.python_version()}, PySide6 "
        f"{PySide6.__version__}, {os.cpu_count()} CPUs shared with other work (the ratio is the figure "
        "that carries from one machine to another). The IR view runs as in the app: elision, lazy "
        "highlighting, regions, and the navigation index built on a worker thread while the "
        f"frames below are timed. Inputs come {IDLE_S * 1000:.0f} ms apart (a held key repeats 25 to 33 times "
        "a second); a frame is timed from its input to the end of its paint. Load average "
        f"{LOAD[0]:.1f} at the start, {LOAD[1]:.1f} at the end.",
        "",
        "| | IrView + navigation | bare QPlainTextEdit | ratio |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Navigation index ready (worker thread, from set_text): {ms(ir['index'])}.",
    ]
    if big is not None:
        big_ir, big_bare, big_lines = big
        lines += [
            "",
            f"{big_lines:,} lines: first paint {ms(big_ir['first_paint'])} (bare {ms(big_bare['first_paint'])}), "
            f"every line in after {ms(big_ir['loaded'])}, the longest stall meanwhile {ms(big_ir['load_stall'])} "
            f"(bare: one stall of {ms(big_bare['first_paint'])}), "
            f"page down median {ms(stats(big_ir['pages'])[0])} (bare {ms(stats(big_bare['pages'])[0])}), "
            f"worst frame {ms(max(big_ir['pages'] + big_ir['jumps']))} (bare "
            f"{ms(max(big_bare['pages'] + big_bare['jumps']))}), longest stall while scrolling "
            f"{ms(big_ir['stall'])} (bare {ms(big_bare['stall'])}); index ready after {ms(big_ir['index'])}.",
        ]
    lines.append(END)
    return "\n".join(lines)


def write_section(section: str) -> None:
    PERF_DOC.parent.mkdir(parents=True, exist_ok=True)
    old = PERF_DOC.read_text(encoding="utf-8") if PERF_DOC.exists() else "# Performance\n"
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + section + old[old.index(END) + len(END) :]
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    PERF_DOC.write_text(new, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snapshot", type=Path, default=None,
                    help="flow-phase MLIR dump to repeat (default: the example's, compiled now)")
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--big", type=int, default=0, help="also a snapshot of this many lines (1000000)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    if args.snapshot is None:
        args.snapshot = example_flow_snapshot()
    if not args.snapshot.is_file():
        print(f"{args.snapshot}: no such snapshot (use --snapshot)", file=sys.stderr)
        return 2
    source = args.snapshot.read_text(encoding="utf-8")
    text, spans = build_snapshot(source, args.lines)
    LOAD[0] = os.getloadavg()[0]
    bare = run(text, spans, "bare")
    ir = run(text, spans, "ir")
    big = None
    if args.big:
        big_text, big_spans = build_snapshot(source, args.big)
        big = (run(big_text, big_spans, "ir", pages=60), run(big_text, big_spans, "bare", pages=60), args.big)
    LOAD[1] = os.getloadavg()[0]
    section = report(text, len(spans), big, ir, bare)
    print(section)
    if not args.no_write:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
