"""Tile sizes chosen by what the timing simulator says they cost.

Candidates: the greedy tiler's tile (`tiling.choose_tiles`) at every SRAM
budget of a fixed ladder -- four budgets per octave, every power of two
among them -- up to the target's SRAM. The ladder does not depend on the
target, so a larger SRAM's candidates include every smaller SRAM's.

Cost: each candidate is scheduled alone, with the tasks and SRAM slots
the pipeline gives the dispatch (schedule.py), and run by the timing
simulator (sim/timing.py) on the target: the fewest cycles win. A lower
bound -- the compute cycles of all tiles on their one engine, the bytes
loaded from DRAM over its bandwidth -- skips the candidates that cannot
win, so few are simulated.

Every step is memoised by the target fields it reads (see the keys below),
so a sweep's points and the app's target edits redo only what changed; the
memos return what a search from scratch returns.

So more SRAM never makes a dispatch slower (the minimum over a superset),
and more DRAM bandwidth neither, as long as the simulator is itself
monotone in bandwidth for a fixed program; tests/core/npu/test_tile_search.py
checks both on whole programs. The greedy tiler alone has no such
property: on the example conv it was 0.6% faster with half the SRAM.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable

from ..target.cost_model import CostModel
from .memory_plan import Request, allocate
from ..program.npu_ir import Buffer, DispatchInfo, NpuProgram
from .schedule import DispatchTiles, tile_tasks
from ..sim.cost import tile_cycles_of
from ..sim.plan import Plan, build_plan
from ..sim.timing import run
from ..target.target import NpuTarget
from .tiling import (Tiling, TilingError, TilingProblem, access_bytes, choose_tiles, footprint,
                     loop_order, working_set)

STEPS_PER_OCTAVE = 4
TileClasses = tuple[tuple[tuple, ...], int]


def budget_ladder(smallest: int, sram_bytes: int) -> list[int]:
    """Budgets from the first ladder step >= `smallest` to the last <= `sram_bytes`,
    largest first. Ladder steps are 2**(k/4) bytes, rounded down."""
    if smallest > sram_bytes:
        return []
    lo = math.ceil(STEPS_PER_OCTAVE * math.log2(max(smallest, 1)) - 1e-9)
    hi = math.floor(STEPS_PER_OCTAVE * math.log2(sram_bytes) + 1e-9)
    out = []
    for k in range(hi, lo - 1, -1):
        b = int(2 ** (k / STEPS_PER_OCTAVE))
        if smallest <= b <= sram_bytes and (not out or out[-1] != b):
            out.append(b)
    return out


def candidates(problem: TilingProblem, sram_bytes: int) -> list[tuple[Tiling, int]]:
    """Distinct greedy tilings over the ladder, each with the largest budget giving it."""
    n = len(problem.loops)
    smallest = 2 * working_set(problem, tuple(
        problem.loops[i].size if i in problem.whole else 1 for i in range(n)))
    ladder = _memo(_LADDERS, problem, lambda: ({}, {}))  # greedy tile per budget, working sets
    tiles, working_sets = ladder
    seen: dict[tuple[int, ...], tuple[Tiling, int]] = {}
    for b in budget_ladder(smallest, sram_bytes):
        if b not in tiles:
            try:
                tiles[b] = choose_tiles(problem, b, working_sets)
            except TilingError:
                tiles[b] = None
        if tiles[b] is not None:
            seen.setdefault(tiles[b].sizes, (tiles[b], b))
    return list(seen.values())


def _positions(size: int, tile: int, reduction: bool) -> list[tuple[int, int, bool, bool]]:
    """(tile size, how many tiles, first along the loop?, last?) of one loop's
    tiles; a parallel loop's tiles count as first and last (they start and
    end no reduction chain)."""
    k = -(-size // tile)
    if not reduction:
        full, rest = divmod(size, tile)
        return [(tile, full, True, True)] + ([(rest, 1, True, True)] if rest else [])
    if k == 1:
        return [(size, 1, True, True)]
    return ([(tile, 1, True, False)] + ([(tile, k - 2, False, False)] if k > 2 else [])
            + [(size - (k - 1) * tile, 1, False, True)])


def lower_bound(tiles: DispatchTiles, info: DispatchInfo, target: NpuTarget) -> int:
    """Cycles no schedule of the dispatch can beat (from its tile classes:
    full and edge tiles, first and last reduction chunks; no task is built).

    - the compute steps run one after another on one engine;
    - every byte crosses the shared DRAM port; the DMA channels each take
      their share of the transfers, a setup latency each (sim/timing.py: the
      last channel stores, the others load);
    - tasks chain (schedule.tile_tasks): a tile waits for the whole task two
      before it (same SRAM slots) and a reduction chunk for the chunk before
      it (partial sums). Each task takes at least its loads (one setup, then
      its bytes at the full bandwidth), its compute and its stores. Without
      reduction chunks the even and the odd tiles are two chains, the longer
      takes half the tasks' time or more; with them, every chunk but the
      first of each output tile lies on one chain.
    """
    return _bound(tile_classes(tiles, info, target), target)


def tile_classes(tiles: DispatchTiles, info: DispatchInfo, target: NpuTarget) -> TileClasses:
    """What the bound needs of a tiling, the DRAM bandwidth and the DMA set aside: per
    class of like tiles (count, compute cycles, load bytes and transfers, store bytes and
    transfers, first along every loop?, tile 0's class?, the last tile's?), and the
    reduction chunks per output tile."""
    reds = tuple(lp.reduction for lp in tiles.loops)
    loads = [op for op in tiles.operands if op.role != "output" and op.dram]
    outs = [op for op in tiles.operands if op.role == "output"]
    chunks = 1
    for lp, t in zip(tiles.loops, tiles.sizes):
        if lp.reduction:
            chunks *= -(-lp.size // t)
    per_loop = [_positions(lp.size, t, lp.reduction) for lp, t in zip(tiles.loops, tiles.sizes)]
    last_pos = tuple(len(p) - 1 for p in per_loop)
    classes = []
    for pos in itertools.product(*(range(len(p)) for p in per_loop)):
        combo = [p[j] for p, j in zip(per_loop, pos)]
        sizes = tuple(c[0] for c in combo)
        first, last = all(c[2] for c in combo), all(c[3] for c in combo)
        c = tile_cycles_of(target)(target, info.kind, info.loop_dims, reds, sizes, info.vector_cost,
                                info.dtype)
        ld = [math.prod(footprint(op.access, sizes)) * op.dtype_bytes
              for op in loads + (outs if first else []) if op.dram]
        st = [math.prod(footprint(op.access, sizes)) * (op.dram_dtype_bytes or op.dtype_bytes)
              for op in (outs if last else []) for _ in tiles.outputs]
        classes.append((math.prod(c[1] for c in combo), c, sum(ld), len(ld), sum(st), len(st),
                        first, not any(pos), pos == last_pos))
    return tuple(classes), chunks


def _bound(classes: TileClasses, target: NpuTarget) -> int:
    bw, setup, channels = target.dram_bytes_per_cycle, target.dma_setup_cycles, target.dma_channels
    compute = in_bytes = n_in = out_bytes = n_out = tasks = first_tasks = 0
    fill = drain = c_first = c_last = 0  # tile 0's loads and compute, the last tile's
    rows, chunks = classes
    for count, c, ld, n_ld, st, n_st, first, is_first, is_last in rows:
        load_time = setup + ld // bw if n_ld else 0
        store_time = n_st * setup + st // bw
        task = load_time + c + store_time
        if is_first:  # tile 0's class: the first tile along every loop
            fill, c_first = load_time, c
        if is_last:  # the last tile's class
            drain, c_last = store_time, c
        compute += count * c
        in_bytes, n_in = in_bytes + count * ld, n_in + count * n_ld
        out_bytes, n_out = out_bytes + count * st, n_out + count * n_st
        tasks += count * task
        first_tasks += count * task if first else 0
    if channels > 1:
        # the loads spread over the load channels; the last compute starts after
        # all of them, the first store after the first compute
        dma = max((n_in * setup + in_bytes // bw) // (channels - 1) + c_last + drain,
                  fill + c_first + n_out * setup + out_bytes // bw)
    else:
        dma = (n_in + n_out) * setup + (in_bytes + out_bytes) // bw
    chain = tasks // 2 if chunks == 1 else tasks - first_tasks
    # The engine computes in program order: tile 0 first, once its loads are
    # in; the last tile last, and its stores end the dispatch.
    return max(fill + compute + drain, (in_bytes + out_bytes) // bw, dma, chain)


def simulated_cycles(tiles: DispatchTiles, info: DispatchInfo, target: NpuTarget) -> int:
    """Cycles of the dispatch's tasks alone on the target (its SRAM slots
    allocated as plan_memory allocates them)."""
    return max(run(_sim_plan(tiles, info, target), target).end, default=0)


def _sim_plan(tiles: DispatchTiles, info: DispatchInfo, target: NpuTarget) -> Plan:
    requests = [Request(slot, access_bytes(op.access, tiles.sizes), 0, 1)
                for op in tiles.operands for slot in op.slots]
    offsets, peak = allocate(requests)
    buffers = tuple(Buffer(r.id, r.size, "", (), "sram", offsets[r.id], "tile", (0, 1))
                    for r in requests)
    program = NpuProgram(target, (info,), buffers, tuple(tile_tasks(tiles, 0)), peak, 0)
    return build_plan(program, target)


# What the search reads of a target, in three nested keys (the target with the
# other fields set to constants, so a field added later is in every key):
# - timing: the simulated cycles of a candidate (array, vector, DMA, bandwidth);
# - plan: its flattened tasks, the bandwidth and DMA setup aside (a candidate
#   re-simulated at another bandwidth reuses them);
# - compute: its lower bound's tile classes, the DMA set aside too.
# The SRAM size only chooses the candidates (the ladder up to it): a candidate's
# slots fit its budget, so its cycles do not depend on the SRAM size.
def timing_key(target: NpuTarget) -> NpuTarget:
    return dataclasses.replace(target, name="", clock_mhz=1, sram_bytes=1, cost=CostModel(),
                               cpu_launch_cycles=0, cpu_ops_per_cycle=1, source="")


def _plan_key(timing: NpuTarget) -> NpuTarget:
    return dataclasses.replace(timing, dram_bytes_per_cycle=1, dma_setup_cycles=0)


def _compute_key(timing: NpuTarget) -> NpuTarget:
    return dataclasses.replace(_plan_key(timing), dma_channels=1)


class _Lru:
    """A bounded memo, least recently used out first, by entries or by a weight (steps);
    thread-safe (a Dask worker may run points on several threads)."""

    def __init__(self, limit: int, weight: Callable[[object], int] = lambda v: 1):
        self.limit, self.weight = limit, weight
        self.items: OrderedDict = OrderedDict()
        self.total = 0
        self.lock = threading.Lock()

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            if key not in self.items:
                self.items[key] = value
                self.total += self.weight(value)
                while self.total > self.limit and len(self.items) > 1:
                    self.total -= self.weight(self.items.popitem(last=False)[1])
        return value

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.total = 0


# Memos shared by every search in the process: models repeat their blocks
# (resnet50 has 16 bottlenecks of four shapes), the app reruns the pipeline on
# every target edit, and a sweep's points differ in a few fields. A dispatch
# shape is its tiling problem and _signature (dispatch indices and names aside).
_LADDERS = _Lru(1024)  # problem -> ({budget: greedy tiling or None}, working sets)
_CHOSEN = _Lru(16384)  # (shape, timing key, SRAM size) -> the chosen tiling
_CLASSES = _Lru(8192)  # (shape, sizes, compute key) -> tile_classes
_CYCLES = _Lru(200_000)  # (shape, sizes, order, timing key) -> simulated cycles
_PLANS = _Lru(200_000, lambda plan: len(plan.step_task))  # (shape, sizes, order, plan key)


def _memo(cache: _Lru, key, make):
    return cache.get(key, make)


def clear_memo() -> None:
    for cache in (_LADDERS, _CHOSEN, _CLASSES, _CYCLES, _PLANS):
        cache.clear()


def best_tiling(problem: TilingProblem, target: NpuTarget,
                dispatch_of: Callable[[Tiling], tuple[DispatchTiles, DispatchInfo]]) -> Tiling:
    """The candidate the simulator finds fastest (`dispatch_of` turns a tiling
    into the dispatch the pipeline would schedule), the first in (bound, larger
    budget) order among the fastest. TilingError when no tile fits."""
    whole = Tiling(tuple(lp.size for lp in problem.loops), loop_order(problem), 0)
    shape = (problem, _signature(*dispatch_of(whole)))
    timing = timing_key(target)
    return _memo(_CHOSEN, (shape, timing, target.sram_bytes),
                 lambda: _search(problem, shape, timing, target, dispatch_of))


def _search(problem, shape, timing, target, dispatch_of) -> Tiling:
    found = candidates(problem, target.sram_bytes)
    if not found:  # no ladder budget holds the smallest tile: it raises with the bytes
        return choose_tiles(problem, target.sram_bytes)  # needed, or (the SRAM is just
        # above the smallest tile, below the next budget) tiles with all of it
    if len(found) == 1:
        return found[0][0]
    compute, plan_key = _compute_key(timing), _plan_key(timing)
    ranked = []
    for t, budget in found:
        classes = _memo(_CLASSES, (shape, t.sizes, compute),
                        lambda t=t: tile_classes(*dispatch_of(t), target))
        ranked.append((_bound(classes, target), -budget, t))
    ranked.sort(key=lambda r: (r[0], r[1]))
    best, best_cycles = None, None
    for bound, _, t in ranked:
        if best_cycles is not None and bound >= best_cycles:
            break  # sorted by bound: nothing later can be faster
        cycles = _memo(_CYCLES, (shape, t.sizes, t.order, timing), lambda t=t: max(run(_memo(
            _PLANS, (shape, t.sizes, t.order, plan_key),
            lambda: _sim_plan(*dispatch_of(t), target)), target).end, default=0))
        if best_cycles is None or cycles < best_cycles:
            best, best_cycles = t, cycles
    return best


def _signature(tiles: DispatchTiles, info: DispatchInfo) -> tuple:
    """What of a dispatch, besides its tiling problem, its simulation depends on."""
    return (info.kind, info.loop_dims, info.vector_cost, info.dtype, len(tiles.outputs),
            tuple((op.role, op.dram is not None, op.dtype_bytes, op.dram_dtype_bytes)
                  for op in tiles.operands))
