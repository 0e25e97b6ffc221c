"""The program flattened for the timing simulation (sim/timing.py).

`build_plan` checks the program (task ids, dependencies, SRAM addresses
against the target) and turns it into flat columns indexed by step id: the
engine each step runs on (DMA-ins round-robin over the load channels, the
last channel storing), its work in cycles or bytes, its SRAM buffers and
its group (a task's consecutive steps of one kind). Tasks with the same
steps share one template; the columns are gathered from the templates'
rows with numpy, so a 100,000-task program flattens in about 0.1 s.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import partial
from itertools import chain
from operator import attrgetter

from ...lazy_import import lazy_module

from ...errors import StudioError
from ..program.npu_ir import NpuProgram
from ..target.target import NpuTarget
from .cost import MAC_KINDS, cpu_cycles, tile_cycles_of, vector_cycles

np = lazy_module("numpy")  # loaded on first use: not at the app's start

DMA_IN, COMPUTE, DMA_OUT, CPU, DMA_COPY = 0, 1, 2, 3, 4  # results.STEP_KINDS codes
_KIND_CODE = {"dma_in": DMA_IN, "compute": COMPUTE, "dma_out": DMA_OUT, "cpu": CPU,
              "dma_copy": DMA_COPY}
_STEP_FIELDS = attrgetter("kind", "srcs", "dsts", "bytes", "ops")  # all a template reads of a step


class SimError(StudioError):
    """The program cannot run on the target (SRAM too small, dependency cycle, ...)."""


@dataclass
class Plan:
    """The program flattened for the event loop: int64 columns indexed by step,
    group or task id, and the lists the loop walks."""

    engines: tuple[str, ...]
    order: list[int]  # execution order of tasks (program order, or a topological one)
    task_dispatch: np.ndarray
    task_first_step: np.ndarray
    task_first_group: np.ndarray
    dep_count: np.ndarray  # dependencies of each task (sorted, unique)
    dep_flat: np.ndarray  # them all, task after task
    step_task: np.ndarray
    step_index: np.ndarray
    step_kind: np.ndarray
    step_engine: np.ndarray
    step_work: np.ndarray  # cycles (compute, cpu) or bytes (DMA)
    step_bytes: np.ndarray
    step_ops: np.ndarray
    group_of_step: np.ndarray  # groups: consecutive steps of one kind inside a task
    group_first: np.ndarray  # first step of each group; groups of a task are consecutive
    touch_step: np.ndarray  # every (step, buffer) use, in step order
    touch_buffer: np.ndarray
    touch_by_buffer: np.ndarray  # indices into the touch columns, buffer after buffer, each in step order
    buffers: list[tuple[str, int, int]]  # (id, offset, size) of used SRAM buffers
    buffer_preds: list[tuple[int, ...]]  # buffers that held overlapping addresses before
    task_template: np.ndarray  # each task's template, whose steps' buffers are template_buffers[i]
    template_buffers: list[tuple[tuple[int, ...], ...]]

    # The two lists below are what the Python event loop walks; the C loop reads the touch columns,
    # so they are made on demand (a few hundred thousand small objects).
    def step_buffers(self) -> list[tuple[int, ...]]:
        """The SRAM buffers each step touches, by step id."""
        return list(chain.from_iterable(map(self.template_buffers.__getitem__, self.task_template.tolist())))

    def buffer_steps(self) -> list[list[int]]:
        """The steps touching each buffer, in step order."""
        by_buffer = self.touch_step[self.touch_by_buffer]
        ends = np.cumsum(np.bincount(self.touch_buffer, minlength=len(self.buffers)))
        return [x.tolist() for x in np.split(by_buffer, ends[:-1])] if len(self.buffers) else []


def engine_names(target: NpuTarget) -> tuple[str, ...]:
    return tuple(f"dma{c}" for c in range(target.dma_channels)) + ("mac", "vector", "cpu")


def _task_order(program: NpuProgram) -> list[int]:
    """Program order when every dependency points backwards, else a stable
    topological order; SimError names a cycle."""
    n = len(program.tasks)
    backwards = True
    for pos, t in enumerate(program.tasks):
        if t.id != pos:
            raise SimError(program.source or None, f"task at position {pos} has id {t.id} "
                           "(task ids must be 0, 1, 2, ... in order)")
        for d in t.deps:
            if not 0 <= d < pos:
                if not 0 <= d < n:
                    raise SimError(program.source or None,
                                   f"task {t.id} depends on missing task {d}")
                backwards = False
    if backwards:
        return list(range(n))
    indeg = [len(set(t.deps)) for t in program.tasks]
    users: list[list[int]] = [[] for _ in range(n)]
    for t in program.tasks:
        for d in set(t.deps):
            users[d].append(t.id)
    ready = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < n:
        stuck = next(i for i in range(n) if indeg[i] > 0)
        cycle, seen = [], {}
        while stuck not in seen:  # walk unfinished dependencies until one repeats
            seen[stuck] = len(cycle)
            cycle.append(stuck)
            stuck = next(d for d in program.tasks[stuck].deps if indeg[d] > 0)
        loop = cycle[seen[stuck]:] + [stuck]
        raise SimError(program.source or None, "task dependencies have a cycle: "
                       + " -> ".join(str(x) for x in reversed(loop)))
    return order


def _sram_buffers(program: NpuProgram):
    """Index of every SRAM buffer by id, and (id, offset, size) per index."""
    out, index = [], {}
    for b in program.buffers:
        if b.placement == "sram":
            index[b.id] = len(out)
            out.append((b.id, b.offset, b.size))
    return out, index


def _address_preds(buffers, first_use: list[int], last_use: list[int], source: str):
    """For each buffer, the earlier buffers whose addresses it reuses."""
    preds: list[list[int]] = [[] for _ in buffers]
    by_off = sorted(range(len(buffers)), key=lambda i: buffers[i][1])
    for a_pos, a in enumerate(by_off):
        a_end = buffers[a][1] + buffers[a][2]
        for b in by_off[a_pos + 1:]:
            if buffers[b][1] >= a_end:
                break
            if last_use[a] < first_use[b]:
                preds[b].append(a)
            elif last_use[b] < first_use[a]:
                preds[a].append(b)
            else:
                raise SimError(source or None, f"SRAM buffers {buffers[a][0]} and {buffers[b][0]} "
                               "overlap in address and are used by the same tasks")
    return [tuple(p) for p in preds]


@dataclass
class _Template:
    """What a task's steps add to the plan, the same for every task with the
    same steps (the scheduler shares one steps tuple between like tiles)."""

    kinds: tuple[int, ...]
    engines: tuple[int, ...]  # -1: a load channel, taken round-robin
    work: tuple[int, ...]
    nbytes: tuple[int, ...]
    ops: tuple[int, ...]
    buffers: tuple[tuple[int, ...], ...]
    group_rel: tuple[int, ...]  # group of each step, from the task's first group
    group_starts: tuple[int, ...]  # first step of each group, from the task's first step


def _template(program: NpuProgram, target: NpuTarget, t, info, bindex, mac_cache, tile_cycles) -> _Template:
    n_dma = target.dma_channels
    mac, vec, cpu = n_dma, n_dma + 1, n_dma + 2
    kinds, engines, work, nbytes, ops, bufs, group_rel, group_starts = [], [], [], [], [], [], [], []
    prev_kind = -1
    for i, s in enumerate(t.steps):
        kind = _KIND_CODE.get(s.kind)
        if kind == DMA_IN or kind == DMA_COPY:
            # a DRAM-to-DRAM copy: its bytes are read and written over the
            # DRAM port (Step.bytes counts both), on a load channel
            engine, w = -1, s.bytes
        elif kind == DMA_OUT:
            engine, w = n_dma - 1, s.bytes
        elif kind == CPU:
            engine, w = cpu, cpu_cycles(target, s.ops)
        elif kind is None:
            raise SimError(program.source or None, f"task {t.id}: unknown step kind {s.kind!r}")
        elif info is not None and t.tile_sizes and (info.kind in MAC_KINDS or s.ops == math.prod(t.tile_sizes)):
            # the backend's cost of one tile (a vector step whose op count is not its tile's, in a
            # program written by hand, takes the shared per-element cost below)
            key = (t.dispatch, t.tile_sizes)
            w = mac_cache.get(key)
            if w is None:
                reds = tuple(it == "reduction" for it in info.iterator_types)
                w = mac_cache[key] = tile_cycles(target, info.kind, info.loop_dims, reds, t.tile_sizes,
                                                 info.vector_cost, info.dtype)
            engine = mac if info.kind in MAC_KINDS else vec
        else:
            cost = info.vector_cost if info is not None and info.vector_cost else 1
            engine, w = vec, vector_cycles(target, s.ops, cost)
        if kind != prev_kind:
            group_starts.append(i)
            prev_kind = kind
        kinds.append(kind)
        engines.append(engine)
        work.append(w)
        nbytes.append(s.bytes)
        ops.append(s.ops)
        bufs.append(tuple(sorted({bindex[b] for b in (*s.srcs, *s.dsts) if b in bindex})))
        group_rel.append(len(group_starts) - 1)
    return _Template(tuple(kinds), tuple(engines), tuple(work), tuple(nbytes), tuple(ops),
                     tuple(bufs), tuple(group_rel), tuple(group_starts))


def inverse(lists: list[tuple[int, ...]], n_keys: int):
    """For item i holding keys lists[i]: the items holding each key, in item
    order; and the (item, key) pairs flattened. (Few keys, many items: one
    array per key.)"""
    counts = np.fromiter(map(len, lists), np.int64, len(lists))
    items = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
    keys = np.fromiter(chain.from_iterable(lists), np.int64, int(counts.sum()))
    by_key = items[np.argsort(keys, kind="stable")]
    splits = np.cumsum(np.bincount(keys, minlength=n_keys))[:-1]
    groups = [x.tolist() for x in np.split(by_key, splits)] if n_keys else []
    return groups, items, keys


def _exclusive_cumsum(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _segments(bases: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """bases[i], bases[i] + 1, ..., counts[i] of them, for every i, concatenated."""
    total = int(counts.sum())
    return np.repeat(bases - _exclusive_cumsum(counts), counts) + np.arange(total, dtype=np.int64)


def _flat_deps(deps: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.fromiter(map(len, deps), np.int64, len(deps))
    return counts, np.fromiter(chain.from_iterable(deps), np.int64, int(counts.sum()))


def _checked_order(program: NpuProgram, deps: list) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The execution order (see _task_order) and every task's dependencies, sorted and
    unique, as counts and one flat array."""
    n = len(program.tasks)
    try:
        counts, flat = _flat_deps(deps)
        ids = np.fromiter(map(attrgetter("id"), program.tasks), np.int64, n)
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
        in_order = bool(np.array_equal(ids, np.arange(n)) and np.all((flat >= 0) & (flat < owner)))
    except (OverflowError, TypeError, ValueError):  # not even int64: _task_order names it
        in_order = False
    if not in_order:
        order = _task_order(program)
        counts, flat = _flat_deps(deps)
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    else:
        order = list(range(n))
    # sorted and unique; the scheduler's already are (the common case)
    repeats = (owner[1:] == owner[:-1]) & (flat[1:] <= flat[:-1])
    if repeats.any():
        for t in set(owner[1:][repeats].tolist()):
            deps[t] = tuple(sorted(set(deps[t])))
        counts, flat = _flat_deps(deps)
    return order, counts, flat


def _task_templates(program: NpuProgram, target: NpuTarget, bindex: dict[str, int]):
    """The templates, in order of first use, each task's template index and dispatch."""
    tasks = program.tasks
    n = len(tasks)
    steps = list(map(attrgetter("steps"), tasks))
    dispatch = list(map(attrgetter("dispatch"), tasks))
    tiles = list(map(attrgetter("tile_sizes"), tasks))
    # The scheduler shares one steps tuple between like tiles of a dispatch: group tasks
    # by it (the program keeps it alive, so its id is stable), provided a group's tasks
    # also share dispatch and tile sizes, on which a template depends.
    ids = np.fromiter(map(id, steps), np.int64, n)
    _, first, group = np.unique(ids, return_index=True, return_inverse=True)
    if len(first) * 2 > n:  # hardly shared (a program read from a file): compare the steps
        try:
            values = map(tuple, map(partial(map, _STEP_FIELDS), steps))
            return _templates_of(program, target, bindex, list(zip(values, dispatch, tiles)),
                                 dispatch)
        except TypeError:  # unhashable fields: keep to the steps tuples
            pass
    rep = first[group].tolist()
    if dispatch == list(map(dispatch.__getitem__, rep)) and tiles == list(map(tiles.__getitem__, rep)):
        by_first = np.argsort(first)
        number = np.empty(len(first), dtype=np.int64)
        number[by_first] = np.arange(len(first))
        return _templates_of(program, target, bindex, None, dispatch,
                             first[by_first].tolist(), number[group])
    return _templates_of(program, target, bindex, list(zip(map(id, steps), dispatch, tiles)),
                         dispatch)


def _templates_of(program, target, bindex, keys, dispatch, reps=None, task_tpl=None):
    """One template per distinct key (or per representative task `reps`), in order of
    first use; each task's template index and dispatch."""
    if keys is not None:  # each task's first task with its key, hashing each key once
        first_use = np.fromiter(map({}.setdefault, keys, range(len(keys))), np.int64, len(keys))
        firsts, task_tpl = np.unique(first_use, return_inverse=True)
        reps = firsts.tolist()
    tasks = program.tasks
    infos = {d.index: d for d in program.dispatches}
    mac_cache: dict[tuple[int, tuple[int, ...]], int] = {}
    tile_cycles = tile_cycles_of(target)
    templates = [_template(program, target, tasks[i], infos.get(dispatch[i]), bindex, mac_cache, tile_cycles)
                 for i in reps]
    return templates, task_tpl, np.asarray(dispatch, dtype=np.int64)


def _rows(templates: list[_Template], name: str) -> np.ndarray:
    return np.fromiter(chain.from_iterable(map(attrgetter(name), templates)), np.int64)


def build_plan(program: NpuProgram, target: NpuTarget) -> Plan:
    deps = list(map(attrgetter("deps"), program.tasks))
    order, dep_count, dep_flat = _checked_order(program, deps)
    n_tasks = len(order)
    identity = order == list(range(n_tasks))
    all_buffers, bindex = _sram_buffers(program)
    templates, task_tpl, task_dispatch = _task_templates(program, target, bindex)

    # Every step is a row of its task's template: gather the columns from the templates.
    tpl_steps = np.fromiter(map(len, map(attrgetter("kinds"), templates)), np.int64, len(templates))
    tpl_groups = np.fromiter(map(len, map(attrgetter("group_starts"), templates)), np.int64,
                             len(templates))
    n_steps, n_groups = tpl_steps[task_tpl], tpl_groups[task_tpl]
    first_step, first_group = _exclusive_cumsum(n_steps), _exclusive_cumsum(n_groups)
    row = _segments(_exclusive_cumsum(tpl_steps)[task_tpl], n_steps)
    step_task = np.repeat(np.arange(n_tasks, dtype=np.int64), n_steps)
    step_index = np.arange(len(row), dtype=np.int64) - np.repeat(first_step, n_steps)
    group_of_step = np.repeat(first_group, n_steps) + _rows(templates, "group_rel")[row]
    group_first = (np.repeat(first_step, n_groups) + _rows(templates, "group_starts")[
        _segments(_exclusive_cumsum(tpl_groups)[task_tpl], n_groups)])
    # DMA-ins take the load channels round-robin, in program order
    step_engine = _rows(templates, "engines")[row]
    loads = step_engine < 0
    step_engine[loads] = np.arange(int(loads.sum()), dtype=np.int64) % max(1, target.dma_channels - 1)

    # Which steps touch each buffer; its first and last user in execution order.
    tpl_buffers = list(chain.from_iterable(map(attrgetter("buffers"), templates)))
    buffers_of = [t.buffers for t in templates]  # per template: its steps' buffers
    touches = np.fromiter(map(len, tpl_buffers), np.int64, len(tpl_buffers))
    touch_count = touches[row]
    touch_step = np.repeat(np.arange(len(row), dtype=np.int64), touch_count)
    touch_buffer = np.fromiter(chain.from_iterable(tpl_buffers), np.int64)[
        _segments(_exclusive_cumsum(touches)[row], touch_count)]
    touch_by_buffer = np.argsort(touch_buffer, kind="stable")
    by_buffer = touch_step[touch_by_buffer]
    users = np.bincount(touch_buffer, minlength=len(all_buffers))
    ends = np.cumsum(users)
    has = users > 0
    if identity:  # ranks are task ids, and each buffer's steps are in order
        first_use = np.full(len(all_buffers), n_tasks, dtype=np.int64)
        last_use = np.full(len(all_buffers), -1, dtype=np.int64)
        first_use[has] = step_task[by_buffer[(ends - users)[has]]]
        last_use[has] = step_task[by_buffer[ends[has] - 1]]
    else:
        rank = np.empty(n_tasks, dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(n_tasks)
        touch_rank = rank[step_task[touch_step]]
        first_use = np.full(len(all_buffers), n_tasks, dtype=np.int64)
        last_use = np.full(len(all_buffers), -1, dtype=np.int64)
        np.minimum.at(first_use, touch_buffer, touch_rank)
        np.maximum.at(last_use, touch_buffer, touch_rank)
    # Only buffers some step touches take SRAM; they must fit the target.
    used = np.flatnonzero(has).tolist()
    for b in used:
        bid, off, size = all_buffers[b]
        if off + size > target.sram_bytes:
            raise SimError(program.source or None,
                           f"target {target.name}'s SRAM ({target.sram_bytes} bytes) cannot hold "
                           f"the plan: buffer {bid} needs bytes {off}..{off + size}")
    if len(used) < len(all_buffers):
        renum = np.full(len(all_buffers), -1, dtype=np.int64)
        renum[used] = np.arange(len(used))
        buffers_of = [tuple(tuple(renum[list(bufs)].tolist()) if bufs else bufs for bufs in tpl)
                      for tpl in buffers_of]
        touch_buffer = renum[touch_buffer]
    buffers = [all_buffers[b] for b in used]
    return Plan(
        engine_names(target), order,
        task_dispatch,
        first_step, first_group, dep_count, dep_flat,
        step_task, step_index, _rows(templates, "kinds")[row], step_engine,
        _rows(templates, "work")[row], _rows(templates, "nbytes")[row], _rows(templates, "ops")[row],
        group_of_step, group_first,
        touch_step, touch_buffer, touch_by_buffer, buffers,
        _address_preds(buffers, first_use[used].tolist(), last_use[used].tolist(), program.source),
        task_tpl, buffers_of)
