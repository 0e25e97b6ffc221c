"""Cutting a sweep's points into batches of about half a second each.

A batch is one task of the executor: its hand-over and its rows' return
cost about as much as a fast point, so a task should run long enough to
hide that (TASK_SECONDS). How long a point takes is not known in advance
(0.001 s for a clock-only point whose plan and simulation are memoised,
seconds for a large model's first plan), so the batcher measures: the
first batch of each worker holds FIRST_BATCH points, and every later one
as many as the points measured so far take TASK_SECONDS to run. Near the
end, batches shrink so that every worker still has a share (no worker
runs a long last batch while the others wait).

Points stay in the order given (per model, those of one plan together), so
a worker's batch keeps reusing its memoised plans.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

TASK_SECONDS = 0.5
FIRST_BATCH = 2  # points: enough to measure, small enough to start every worker at once


@dataclass
class Batcher:
    """Hands out batches (model hash, [(key, target, plan target), ...]) on demand."""

    todo: list[tuple[str, list]]  # per model: its hash and its points in order
    workers: int
    task_seconds: float = TASK_SECONDS
    seconds: float = 0.0  # measured: worker seconds over `measured` points
    measured: int = 0
    sizes: list[int] = field(default_factory=list)  # each batch's size, in hand-out order
    _model: int = 0
    _pos: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def left(self) -> int:
        return sum(len(p) for _, p in self.todo[self._model:]) - self._pos

    def size(self) -> int:
        """Points for the next batch."""
        if not self.measured:
            return FIRST_BATCH
        per_point = self.seconds / self.measured
        want = math.ceil(self.task_seconds / per_point) if per_point > 0 else self.left
        share = math.ceil(self.left / self.workers)  # the tail: every worker busy
        return max(1, min(want, share))

    def next(self) -> tuple[str, list] | None:
        """The next batch (points of one model), None when every point is handed out."""
        with self._lock:
            while self._model < len(self.todo) and self._pos >= len(self.todo[self._model][1]):
                self._model, self._pos = self._model + 1, 0
            if self._model >= len(self.todo):
                return None
            model, points = self.todo[self._model]
            batch = points[self._pos:self._pos + self.size()]
            self._pos += len(batch)
            self.sizes.append(len(batch))
            return model, batch

    def record(self, points: int, seconds: float) -> None:
        """A batch of `points` ran in `seconds` (the worker's own time)."""
        with self._lock:
            self.measured += points
            self.seconds += seconds
