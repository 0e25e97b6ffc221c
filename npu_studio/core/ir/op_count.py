"""Count the operations of a snapshot with the MLIR parser."""

from __future__ import annotations

import queue
import threading
from collections import Counter
from pathlib import Path

from ..textio import read_text
from .context import mlir_context


def ops_by_dialect(path: Path, context=None) -> Counter:
    """Operations per dialect prefix (`linalg`, `flow`, ...) in the file at `path`.

    Counting several files, pass one `context` (core/ir/context.py) for all: making one
    (registering every IREE dialect) costs more than parsing a typical snapshot.
    """
    return ops_in_text(read_text(path), context)


def ops_in_text(text: str, context=None) -> Counter:
    """ops_by_dialect of MLIR `text`."""
    from iree.compiler import ir

    counts: Counter = Counter()

    def visit(op):
        counts[op.name.split(".", 1)[0]] += 1
        return ir.WalkResult.ADVANCE

    with context or mlir_context():
        module = ir.Module.parse(text)
        module.operation.walk(visit)
        del module
    counts["builtin"] -= 1  # the top-level module itself
    return +counts


class BackgroundOpCounts:
    """Counts the snapshots of a compile on a worker thread as the compiler finishes them, so the
    counting overlaps the compile instead of following it. `add` is a compile's `on_snapshot`
    (core/compile/compiler.py): it reads the file at once, before the compile moves it.
    `counts()` waits for the worker and returns {phase: Counter}; a snapshot that could not be
    counted here is missing from it, for the caller to count (and report) itself."""

    def __init__(self):
        self._texts: queue.SimpleQueue = queue.SimpleQueue()
        self._counts: dict[str, Counter] = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._work, name="op-counts", daemon=True)
        self._thread.start()

    def add(self, phase: str, path: Path) -> None:
        self._texts.put((phase, read_text(path)))

    def stop(self) -> None:
        """End the worker without waiting: after the snapshot it is counting, the rest are dropped."""
        self._stopped = True
        self._texts.put(None)

    def counts(self) -> dict[str, Counter]:
        self._texts.put(None)
        self._thread.join()
        return dict(self._counts)

    def _work(self) -> None:
        context = None  # made at the first snapshot, when the compiler runs: not beside the import
        last: tuple[str, Counter] | None = None  # phases that change nothing (input, abi) print the same text
        while (item := self._texts.get()) is not None and not self._stopped:
            phase, text = item
            try:
                if last is not None and last[0] == text:
                    self._counts[phase] = Counter(last[1])
                    continue
                context = context or mlir_context()
                self._counts[phase] = ops_in_text(text, context)
                last = (text, self._counts[phase])
            except Exception:  # noqa: BLE001, S112 - not counted here: the caller counts (and reports) it itself
                continue
