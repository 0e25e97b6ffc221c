"""IrView on a 100,000-line snapshot: time to first paint and scroll frames.

Builds a realistic flow-phase snapshot by repeating the dispatch of a real
IREE dump (module.6.flow.mlir, symbols renamed per copy, each with its
dense<"0x..."> constant), shows it in an IrView in an offscreen window with
one region per dispatch, then measures

  * first paint: from set_text() until the viewport's first paintEvent ends;
  * page-down frames: key press -> scroll -> highlight -> repaint done;
  * jump frames: goto(), mark_region() and scroll-bar jumps to random places.

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

    def paintEvent(self, event):  # noqa: N802
        super().paintEvent(event)
        self.paints += 1
        self.paint_end = time.perf_counter()


def wait_paint(app, view: TimedView, before: int, timeout: float = 10.0) -> float:
    deadline = time.perf_counter() + timeout
    while view.paints == before:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        if time.perf_counter() > deadline:
            raise TimeoutError("no paint")
    return view.paint_end


def frame(app, view: TimedView, action) -> float:
    app.processEvents()
    before = view.paints
    t0 = time.perf_counter()
    action()
    return wait_paint(app, view, before) - t0


def run(snapshot: Path, lines: int) -> dict:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    text, spans = build_snapshot(snapshot.read_text(encoding="utf-8"), lines)
    window = QtWidgets.QMainWindow()
    view = TimedView()
    window.setCentralWidget(view)
    window.resize(1200, 900)
    window.show()
    QTest.qWaitForWindowExposed(window)
    app.processEvents()
    colors = [QtGui.QColor(c) for c in ("#4e79a7", "#f28e2b", "#59a14f", "#e15759")]
    regions = [Region(f"d{i}", a, b, colors[i % 4]) for i, (a, b) in enumerate(spans)]

    before = view.paints
    t0 = time.perf_counter()
    view.set_text(text)
    view.set_regions(regions)
    t_set = time.perf_counter() - t0
    first_paint = wait_paint(app, view, before) - t0
    view.setFocus()

    down = QtCore.Qt.Key.Key_PageDown
    pages = [frame(app, view, lambda: QTest.keyClick(view, down)) for _ in range(300)]
    rng = random.Random(7)
    n = view.blockCount()
    jumps = []
    for k in range(60):
        kind = k % 3
        if kind == 0:
            line = rng.randrange(1, n)
            jumps.append(frame(app, view, lambda: view.goto(line, 5)))
        elif kind == 1:
            key = rng.choice(regions).key
            jumps.append(frame(app, view, lambda: view.mark_region(key)))
        else:
            value = rng.randrange(0, view.verticalScrollBar().maximum())
            jumps.append(frame(app, view, lambda: view.verticalScrollBar().setValue(value)))
    result = {
        "lines": view.blockCount(),
        "mbytes": len(text) / 1e6,
        "display_mbytes": len(view.toPlainText()) / 1e6,
        "regions": len(regions),
        "set_text": t_set,
        "first_paint": first_paint,
        "pages": pages,
        "jumps": jumps,
        "highlighted": view.highlighter.blocks_highlighted,
        "visible": view.visible_line_range(),
    }
    window.close()
    return result


def ms(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x >= 0.0095 else f"{x * 1000:.1f} ms"


def report(r: dict) -> str:
    first, last = r["visible"]
    p, j = sorted(r["pages"]), sorted(r["jumps"])
    return "\n".join([
        BEGIN,
        "## IR view: load and scroll a 100,000-line snapshot",
        "",
        f"`benchmarks/ir_view_scroll.py`: {r['lines']:,} lines ({r['mbytes']:.1f} MB; "
        f"{r['display_mbytes']:.1f} MB shown after eliding constants), built from the real "
        f"flow-phase dispatch of `module.6.flow.mlir` repeated with renamed symbols; "
        f"{r['regions']:,} dispatch regions; 1200x900 offscreen window "
        f"({last - first + 1} lines visible); Python {platform.python_version()}, "
        f"PySide6 {PySide6.__version__}, {os.cpu_count()} CPUs.",
        "",
        "| | time |",
        "|---|---|",
        f"| set_text + set_regions (elide, load document) | {ms(r['set_text'])} |",
        f"| first paint (from set_text to end of first paintEvent) | {ms(r['first_paint'])} |",
        f"| page down, median of {len(p)} | {ms(statistics.median(p))} |",
        f"| page down, 95th percentile | {ms(p[int(0.95 * (len(p) - 1))])} |",
        f"| page down, worst | {ms(p[-1])} |",
        f"| jump (goto / mark_region / scroll bar), median of {len(j)} | "
        f"{ms(statistics.median(j))} |",
        f"| jump, worst | {ms(j[-1])} |",
        "",
        f"Lines lexed by the highlighter over the whole run: {r['highlighted']:,} "
        f"of {r['lines']:,} (only what was on screen). Targets: first paint < 1 s, "
        f"frames < 50 ms. A frame is key press (or call) to the end of the repaint.",
        END,
    ])


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
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    if args.snapshot is None:
        args.snapshot = example_flow_snapshot()
    if not args.snapshot.is_file():
        print(f"{args.snapshot}: no such snapshot (use --snapshot)", file=sys.stderr)
        return 2
    section = report(run(args.snapshot, args.lines))
    print(section)
    if not args.no_write:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
