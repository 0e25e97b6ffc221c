"""Tile sizes for one dispatch's iteration space (pure arithmetic).

A `TilingProblem` is the root op's loops (name, extent, parallel or
reduction) and the tensors a tile touches, each dimension an affine
function of the loops (`Access`). A tile of sizes t touches, along a
dimension sum(c_i * d_i) + k, a window of sum(|c_i| * (t_i - 1)) + 1
elements (clipped to the dimension) -- that is the conv halo, and it is
exact for strided and dilated windows too.

`choose_tiles` starts from the smallest tile and grows it greedily,
array-mapped loops first, keeping the working set (every operand's
window, aligned, times two for double buffering) within SRAM. Tiles
need not divide the loop extents: the last tile along a loop is shorter.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass

from ..backend.api import NoTileFits

ALIGN = 64  # SRAM allocation granule in bytes


def align(n: int, a: int = ALIGN) -> int:
    return -(-n // a) * a


@dataclass(frozen=True)
class Loop:
    name: str  # "F", "OH", "K", ... or "d3"
    size: int
    reduction: bool = False


@dataclass(frozen=True)
class Access:
    """One tensor a tile touches.

    dims: per tensor dimension, ((loop index, coefficient), ...) and the
    dimension's size; None coefficients means "not affine in the loops":
    the whole dimension is resident.
    role: "input", "weight" or "output".
    """

    name: str
    role: str
    elem_bytes: int
    dims: tuple[tuple[tuple[tuple[int, int], ...] | None, int], ...]


@dataclass(frozen=True)
class TilingProblem:
    loops: tuple[Loop, ...]
    accesses: tuple[Access, ...]
    array_loops: tuple[int, ...] = ()  # loops mapped onto MAC rows, cols
    array_sizes: tuple[int, ...] = ()  # rows, cols (or vector lanes)
    whole: tuple[int, ...] = ()  # loops never split (a softmax row)


@dataclass(frozen=True)
class Tiling:
    sizes: tuple[int, ...]  # tile size per loop
    order: tuple[int, ...]  # loop indices, outermost first
    working_set: int  # bytes of one tile's buffers (single-buffered)

    @property
    def sram_bytes(self) -> int:
        return 2 * self.working_set


class TilingError(NoTileFits):
    """No tile of the dispatch fits the SRAM budget."""


def footprint(acc: Access, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Elements per dimension of `acc` touched by a tile of `sizes`."""
    out = []
    for coeffs, dim in acc.dims:  # the tile search calls this millions of times: plain loops
        if coeffs is None:
            out.append(dim)
            continue
        extent = 1
        for i, c in coeffs:
            extent += (c if c > 0 else -c) * (sizes[i] - 1)
        out.append(dim if extent > dim else (extent if extent > 1 else 1))
    return tuple(out)


def access_bytes(acc: Access, sizes: tuple[int, ...]) -> int:
    return align(math.prod(footprint(acc, sizes)) * acc.elem_bytes)


def working_set(problem: TilingProblem, sizes: tuple[int, ...]) -> int:
    return sum(access_bytes(a, sizes) for a in problem.accesses)


def _grow(size: int, cur: int, step: int, cap: int) -> int:
    """Next candidate tile size after `cur`: doubling up to the array size
    `step`, then whole multiples of it; never past `cap` or `size`."""
    limit = min(size, cap)
    if cur >= limit:
        return cur
    nxt = cur * 2 if step <= 1 else (min(cur * 2, step) if cur < step else cur + step)
    return min(limit, max(nxt, cur + 1))


def loop_order(problem: TilingProblem) -> tuple[int, ...]:
    """Parallel loops outside (array-mapped ones outermost, so a weight
    or output block stays put while the others sweep), reductions
    innermost so partial sums accumulate in SRAM."""
    n = len(problem.loops)
    par = [i for i in range(n) if not problem.loops[i].reduction]
    red = [i for i in range(n) if problem.loops[i].reduction]
    arr = [i for i in problem.array_loops if i in par]
    return tuple(arr + [i for i in par if i not in arr] + red)


def choose_tiles(problem: TilingProblem, sram_bytes: int,
                 sizes_seen: dict[tuple[int, ...], int] | None = None) -> Tiling:
    """Largest greedy tile whose double-buffered working set fits.

    `sizes_seen` memoizes working sets across calls on one problem (the tile
    search runs this at forty budgets, and the first growth steps repeat)."""
    seen = {} if sizes_seen is None else sizes_seen

    def ws_of(sizes: tuple[int, ...]) -> int:
        ws = seen.get(sizes)
        if ws is None:
            ws = seen[sizes] = working_set(problem, sizes)
        return ws

    n = len(problem.loops)
    if any(lp.size < 1 for lp in problem.loops):
        raise TilingError("empty iteration space")
    sizes = [problem.loops[i].size if i in problem.whole else 1 for i in range(n)]
    need = ws_of(tuple(sizes))
    if 2 * need > sram_bytes:
        raise TilingError(
            f"smallest tile needs {2 * need} bytes of SRAM double-buffered, "
            f"target has {sram_bytes}"
        )
    steps = [1] * n
    for i, s in zip(problem.array_loops, problem.array_sizes):
        steps[i] = s
    par = [i for i in range(n) if not problem.loops[i].reduction]
    red = [i for i in range(n) if problem.loops[i].reduction]
    arr = [i for i in problem.array_loops]
    # Priority: fill the array, then the small reduction windows (KH, KW),
    # then every loop, parallel innermost-first before reductions.
    small_red = [i for i in red if problem.loops[i].size <= 16 and i not in arr]
    rest = [i for i in reversed(par)] + [i for i in red if i not in small_red]
    big = max((lp.size for lp in problem.loops), default=1)
    phases = [(arr, steps), (small_red, [big] * n), (rest, [big] * n)]
    for group, caps in phases:
        changed = True
        while changed:
            changed = False
            for i in group:
                cand = _grow(problem.loops[i].size, sizes[i], steps[i], caps[i])
                if cand == sizes[i]:
                    continue
                trial = sizes.copy()
                trial[i] = cand
                ws = ws_of(tuple(trial))
                if 2 * ws <= sram_bytes:
                    sizes, need, changed = trial, ws, True
    # Doubling stops short; stretch the outer parallel loops to the largest
    # size that still fits (binary search, the working set is monotone).
    for i in par:
        if i in arr:
            continue
        lo, hi = sizes[i], problem.loops[i].size
        while lo < hi:
            mid = (lo + hi + 1) // 2
            trial = sizes.copy()
            trial[i] = mid
            if 2 * ws_of(tuple(trial)) <= sram_bytes:
                lo = mid
            else:
                hi = mid - 1
        sizes[i] = lo
    need = ws_of(tuple(sizes))
    return Tiling(tuple(sizes), loop_order(problem), need)


def tile_counts(loops: tuple[Loop, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-(-lp.size // t) for lp, t in zip(loops, sizes))


def enumerate_tiles(loops: tuple[Loop, ...], sizes: tuple[int, ...], order: tuple[int, ...]):
    """Yield (offsets, sizes) per tile, loops nested in `order` (outermost
    first); offsets/sizes are indexed by loop, not by order."""
    per_loop = [[(o, min(sizes[i], loops[i].size - o)) for o in range(0, loops[i].size, sizes[i])]
                for i in order]
    if not order:
        yield (), ()
        return
    if len(order) == 1:
        for pair in per_loop[0]:
            yield (pair[0],), (pair[1],)
        return
    by_loop = operator.itemgetter(*[order.index(i) for i in range(len(loops))])
    for combo in itertools.product(*per_loop):
        yield tuple(zip(*by_loop(combo)))
