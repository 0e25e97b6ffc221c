"""What a designer reads from a sweep table: Pareto fronts, the knee, sensitivity, sanity checks.

Pure functions over rows (dicts, as table.read_table gives them); every
objective is minimised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# Monotonicity the NPU model must have, other parameters equal: (parameter, metric) pairs where
# a larger parameter never gives a larger metric.
MONOTONE_RULES: tuple[tuple[str, str], ...] = (
    ("sram.size_kib", "dram_bytes"), ("sram.size_kib", "cycles"),
    ("dram.bytes_per_cycle", "cycles"),
)


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """Which rows of `points` (n x k, minimised) no other row dominates (is <= in every
    column and < in one). Equal rows are all kept."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    if points.shape[1] == 2:
        # over the distinct points sorted by x then y, a point is on the front iff its y is below
        # every earlier one's; equal points share their verdict
        order = np.lexsort((points[:, 1], points[:, 0]))
        xs, ys = points[order, 0], points[order, 1]
        new = np.ones(n, dtype=bool)  # first of a run of equal points
        new[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
        group = np.cumsum(new) - 1
        firsts = ys[new]
        earlier = np.concatenate(([np.inf], np.minimum.accumulate(firsts)[:-1]))
        mask[order] = (firsts < earlier)[group]
        return mask
    order = np.lexsort(points.T[::-1])  # by the first column, then the second, ...
    # a later row in lexicographic order never dominates an earlier one: the front only grows
    front = np.empty((0, points.shape[1]))
    for i in order:
        p = points[i]
        if len(front) and np.any(np.all(front <= p, axis=1) & np.any(front < p, axis=1)):
            continue
        mask[i] = True
        front = np.vstack([front, p])
    return mask


def front(rows: list[dict], objectives: tuple[str, ...]) -> list[dict]:
    """The feasible rows on the Pareto front of `objectives`, sorted by the first."""
    ok = [r for r in rows if r.get("status") == "ok" and r.get("meets_constraints", True)
          and all(_finite(r.get(o)) for o in objectives)]
    if not ok:
        return []
    mask = pareto_mask(np.array([[r[o] for o in objectives] for r in ok], dtype=float))
    return sorted((r for r, m in zip(ok, mask) if m), key=lambda r: tuple(r[o] for o in objectives))


def knee(front_rows: list[dict], x: str, y: str) -> dict | None:
    """The front point farthest from the line through its two ends, both axes scaled to [0, 1]."""
    if len(front_rows) < 3:
        return front_rows[0] if front_rows else None
    xs = np.array([r[x] for r in front_rows], dtype=float)
    ys = np.array([r[y] for r in front_rows], dtype=float)
    xs = (xs - xs.min()) / ((xs.max() - xs.min()) or 1.0)
    ys = (ys - ys.min()) / ((ys.max() - ys.min()) or 1.0)
    (x0, y0), (x1, y1) = (xs[0], ys[0]), (xs[-1], ys[-1])
    dist = np.abs((y1 - y0) * xs - (x1 - x0) * ys + x1 * y0 - y1 * x0)
    return front_rows[int(np.argmax(dist))]


def best(rows: list[dict], metric: str) -> dict | None:
    """The feasible row meeting every constraint with the least `metric` (first on ties)."""
    ok = [r for r in rows if r.get("status") == "ok" and r.get("meets_constraints", True)
          and _finite(r.get(metric))]
    return min(ok, key=lambda r: r[metric]) if ok else None


def sensitivity(rows: list[dict], params: list[str], base: dict[str, Any], metric: str,
                model: str) -> dict[str, list[tuple[Any, float]]]:
    """Per parameter: (value, metric) with the other parameters held at the base (the grid value
    nearest the base target's, when the base is not on the grid)."""
    mine = [r for r in rows if r["model"] == model and r.get("status") == "ok"]
    held = {}
    for p in params:
        values = sorted({r[p] for r in mine}, key=_sort_key)
        b = base.get(p)
        if b in values or not values:
            held[p] = b
        elif all(isinstance(v, (int, float)) for v in values) and isinstance(b, (int, float)):
            held[p] = min(values, key=lambda v: (abs(v - b), v))
        else:
            held[p] = values[0]
    out = {}
    for p in params:
        line = [(r[p], r[metric]) for r in mine
                if all(r[q] == held[q] for q in params if q != p) and _finite(r.get(metric))]
        out[p] = sorted(line, key=lambda vm: _sort_key(vm[0]))
    return out


@dataclass(frozen=True)
class Violation:
    model: str
    parameter: str
    metric: str
    point_a: int  # smaller parameter value
    point_b: int
    value_a: Any
    value_b: Any

    def __str__(self) -> str:
        return (f"{self.model}: more {self.parameter} gave more {self.metric}: point {self.point_a} "
                f"{self.metric}={self.value_a} < point {self.point_b} {self.metric}={self.value_b}")


def monotonicity(rows: list[dict], params: list[str],
                 rules: tuple[tuple[str, str], ...] = MONOTONE_RULES) -> list[Violation]:
    """Pairs of feasible points differing in one parameter where a larger value of it gave a
    larger metric, against `rules`."""
    out = []
    ok = [r for r in rows if r.get("status") == "ok"]
    for param, metric in rules:
        if param not in params:
            continue
        others = [q for q in params if q != param]
        groups: dict[tuple, list[dict]] = {}
        for r in ok:
            groups.setdefault((r["model"],) + tuple(r[q] for q in others), []).append(r)
        for group in groups.values():
            group.sort(key=lambda r: _sort_key(r[param]))
            for a, b in zip(group, group[1:]):
                if _finite(a.get(metric)) and _finite(b.get(metric)) and b[metric] > a[metric]:
                    out.append(Violation(a["model"], param, metric, a["point"], b["point"],
                                         a[metric], b[metric]))
    return out


def sanity(rows: list[dict], metrics: list[str]) -> list[str]:
    """Feasible rows with a negative or NaN metric."""
    out = []
    for r in rows:
        if r.get("status") != "ok":
            continue
        for m in metrics:
            v = r.get(m)
            if v is None:
                continue
            if isinstance(v, float) and math.isnan(v):
                out.append(f"{r['model']}: point {r['point']}: {m} is NaN")
            elif v < 0:
                out.append(f"{r['model']}: point {r['point']}: {m} is negative ({v})")
    return out


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _sort_key(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))
