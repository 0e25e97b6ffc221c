"""The IR outline of a 1,000,000-line snapshot: GUI-thread time to show it, and to follow the cursor.

Builds the snapshot as benchmarks/ir_view_scroll.py does (a real flow dump's dispatch repeated), indexes
it (core/ir/nav_index), then measures on the GUI thread:

  * before: the former OutlineTree.show_outline (copied below), every row made on the GUI thread;
  * now: OutlineTree.show_outline with rows made on a thread (OutlineRows.build, as the navigator's
    building thread does), the first event-loop turn after it (layout and paint), and showing a second
    outline in place of the first (the old rows are freed on a thread);
  * the longest event-loop stall (a 2 ms timer's longest gap) while a thread makes or frees the rows;
  * follow_cursor at a line near the end: the former linear scans against the bisect (median of 50).

    QT_QPA_PLATFORM=offscreen python benchmarks/ir_outline.py [--snapshot F] [--lines N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtWidgets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ir_view_scroll import build_snapshot, example_flow_snapshot  # noqa: E402

from npu_studio.core.ir import nav_index  # noqa: E402
from npu_studio.ui.ir.nav_panels import OutlineTree  # noqa: E402
from npu_studio.ui.ir.navigation import Activity  # noqa: E402
from npu_studio.ui.ir.outline_rows import NAME, PLACE, OutlineRows, shared_prefix  # noqa: E402

DEFAULT_SOURCE = Path("/tmp/p40/flow.mlir")


class BenchNavigator(QtCore.QObject):
    """What OutlineTree asks of an IrNavigator, over a bare QPlainTextEdit (no index build beside)."""

    sig_outline = QtCore.Signal(object, object)

    def __init__(self, text: str):
        super().__init__()
        self.view = QtWidgets.QPlainTextEdit()
        self.view.setPlainText(text)
        self.activity = Activity()
        self.outline_builder = None

    def jump(self, line: int, col: int = 0) -> None:
        pass


class FormerOutline(QtWidgets.QTreeWidget):
    """OutlineTree's show_outline and follow_cursor before rows were made off the GUI thread."""

    def __init__(self, navigator: BenchNavigator):
        super().__init__()
        self.navigator = navigator
        self.setHeaderHidden(True)
        self.setUniformRowHeights(True)
        self._starts: list = []
        self._index = None

    def show_outline(self, index) -> None:
        self._index = index
        self.clear()
        self._starts = []
        parents: list = []
        prefix = shared_prefix([item.name for item in index.outline])
        for item in index.outline:
            del parents[item.depth:]
            parent = parents[-1] if parents else self.invisibleRootItem()
            shown = item.name.replace(prefix, "") if prefix else item.name
            row = QtWidgets.QTreeWidgetItem(parent, [f"{shown}  ({item.kind})"])
            row.setData(0, NAME, item.name)
            row.setData(0, PLACE, (item.start_line, 0))
            row.setToolTip(0, f"{item.kind} {item.name}, lines {item.start_line}-{item.end_line}")
            self._starts.append((item.start_line, row))
            parents.append(row)
        self.expandToDepth(1)

    def follow_cursor(self) -> None:
        line = self.navigator.view.textCursor().blockNumber() + 1
        item = None
        for it in self._index.outline:  # the former NavIndex.outline_at
            if it.start_line > line:
                break
            if it.end_line >= line and (item is None or it.depth >= item.depth):
                item = it
        row = next((r for start, r in self._starts if item is not None and start == item.start_line
                    and r.data(0, PLACE)[0] == item.start_line and r.data(0, NAME) == item.name), None)
        if row is not None:
            self.setCurrentItem(row)
            self.scrollToItem(row)


class StallClock:
    """The longest gap between ticks of a 2 ms timer: how long the event loop was kept waiting."""

    def __init__(self):
        self.longest, self._last = 0.0, time.perf_counter()
        self._timer = QtCore.QTimer(interval=2, timeout=self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest, self._last = max(self.longest, now - self._last), now

    def run_until(self, app, done) -> float:
        self.longest, self._last = 0.0, time.perf_counter()
        self._timer.start()
        while not done():
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        self._timer.stop()
        return self.longest


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def rows_on_a_thread(app, clock: StallClock, index) -> tuple[OutlineRows, float, float]:
    made: list = []
    start = time.perf_counter()
    thread = threading.Thread(target=lambda: made.append(OutlineRows.build(index, Activity().pause)))
    thread.start()
    stall = clock.run_until(app, lambda: not thread.is_alive())
    return made[0], time.perf_counter() - start, stall


def follow_ms(app, outline, view, line: int) -> float:
    cursor = view.textCursor()
    cursor.setPosition(view.document().findBlockByNumber(line - 1).position())
    view.setTextCursor(cursor)
    app.processEvents()
    return statistics.median(timed(outline.follow_cursor) for _ in range(50)) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snapshot", type=Path, default=DEFAULT_SOURCE if DEFAULT_SOURCE.is_file() else None,
                    help="flow-phase MLIR dump to repeat (default: /tmp/p40/flow.mlir, else the example's, compiled now)")
    ap.add_argument("--lines", type=int, default=1_000_000)
    args = ap.parse_args()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    snapshot = args.snapshot or example_flow_snapshot()
    if not snapshot.is_file():
        print(f"{snapshot}: no such snapshot (use --snapshot)", file=sys.stderr)
        return 2
    text, _ = build_snapshot(snapshot.read_text(encoding="utf-8"), args.lines)
    start = time.perf_counter()
    index = nav_index.build(text)
    print(f"{len(index.lines):,} lines, {len(index.outline):,} outline items (indexed in {time.perf_counter() - start:.1f} s)")
    navigator = BenchNavigator(text)
    near_end = len(index.lines) - 20
    clock = StallClock()

    former = FormerOutline(navigator)
    former.resize(300, 700)
    former.show()
    app.processEvents()
    show = timed(lambda: former.show_outline(index))
    first_turn = timed(app.processEvents)
    follow_before = follow_ms(app, former, navigator.view, near_end)
    print(f"before: show_outline {show * 1e3:.0f} ms + first turn {first_turn * 1e3:.0f} ms on the GUI thread; "
          f"follow_cursor {follow_before:.2f} ms")
    former.close()
    former.clear()

    outline = OutlineTree(navigator)
    outline.resize(300, 700)
    outline.show()
    app.processEvents()
    rows, made_s, made_stall = rows_on_a_thread(app, clock, index)
    show = timed(lambda: outline.show_outline(index, rows))
    first_turn = timed(app.processEvents)
    follow_now = follow_ms(app, outline, navigator.view, near_end)
    rows2, _, _ = rows_on_a_thread(app, clock, index)
    old_row = outline.topLevelItem(0)
    replace = timed(lambda: outline.show_outline(index, rows2))
    import shiboken6

    free_stall = clock.run_until(app, lambda: not shiboken6.isValid(old_row))
    print(f"now: rows made on a thread in {made_s:.2f} s (longest event-loop stall meanwhile {made_stall * 1e3:.0f} ms); "
          f"show_outline {show * 1e3:.0f} ms + first turn {first_turn * 1e3:.0f} ms on the GUI thread; "
          f"showing another in its place {replace * 1e3:.0f} ms (longest stall while the old rows are freed "
          f"{free_stall * 1e3:.0f} ms); follow_cursor {follow_now:.3f} ms")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
