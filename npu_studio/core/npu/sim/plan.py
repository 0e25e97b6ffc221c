"""The program flattened for the timing simulation (sim/timing.py).

`build_plan` checks the program (task ids, dependencies, SRAM addresses
against the target) and turns it into flat lists indexed by step id: the
engine each step runs on (DMA-ins round-robin over the load channels, the
last channel storing), its work in cycles or bytes, its SRAM buffers and
its group (a task's consecutive steps of one kind). Tasks with the same
steps share one template, so a 100,000-task program flattens in about
0.2 s.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter

import numpy as np

from ...errors import StudioError
from ..npu_ir import NpuProgram
from ..target import NpuTarget
from .cost import MAC_KINDS, cpu_cycles, mac_cycles, vector_cycles

DMA_IN, COMPUTE, DMA_OUT, CPU, DMA_COPY = 0, 1, 2, 3, 4  # results.STEP_KINDS codes
_KIND_CODE = {"dma_in": DMA_IN, "compute": COMPUTE, "dma_out": DMA_OUT, "cpu": CPU,
              "dma_copy": DMA_COPY}


class SimError(StudioError):
    """The program cannot run on the target (SRAM too small, dependency cycle, ...)."""


@dataclass
class Plan:
    """The program flattened for the event loop (lists indexed by step id)."""

    engines: tuple[str, ...]
    task_dispatch: list[int]
    task_first_step: list[int]
    task_deps: list[tuple[int, ...]]
    step_task: list[int]
    step_index: list[int]
    step_kind: list[int]
    step_engine: list[int]
    step_work: list[int]  # cycles (compute, cpu) or bytes (DMA)
    step_bytes: list[int]
    step_ops: list[int]
    step_buffers: list[tuple[int, ...]]  # SRAM buffer indices touched
    group_of_step: list[int]  # groups: consecutive steps of one kind inside a task
    group_first: list[int]  # first step of each group; groups of a task are consecutive
    task_first_group: list[int]
    buffers: list[tuple[str, int, int]]  # (id, offset, size) of used SRAM buffers
    buffer_preds: list[tuple[int, ...]]  # buffers that held overlapping addresses before
    buffer_steps: list[list[int]]  # steps touching each buffer, in step order
    order: list[int]  # execution order of tasks (program order, or a topological one)
    _arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def array(self, column: str) -> np.ndarray:
        """A column as an int64 array, converted once (the loop reads the
        lists; the statistics and the set-up read arrays)."""
        a = self._arrays.get(column)
        if a is None:
            a = self._arrays[column] = np.asarray(getattr(self, column), dtype=np.int64)
        return a


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
    loads: int  # steps on the round-robin load channels
    by_phase: dict[int, tuple[int, ...]]  # engines when the first load takes channel `phase`


def _template(program: NpuProgram, target: NpuTarget, t, info, bindex, mac_cache) -> _Template:
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
        elif info is not None and info.kind in MAC_KINDS and t.tile_sizes:
            key = (t.dispatch, t.tile_sizes)
            w = mac_cache.get(key)
            if w is None:
                reds = tuple(it == "reduction" for it in info.iterator_types)
                w = mac_cache[key] = mac_cycles(target, info.kind, info.loop_dims, reds,
                                                t.tile_sizes)
            engine = mac
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
                     tuple(bufs), tuple(group_rel), tuple(group_starts), engines.count(-1), {})


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


def build_plan(program: NpuProgram, target: NpuTarget) -> Plan:
    order = _task_order(program)
    identity = order == list(range(len(order)))
    rank = list(range(len(order)))
    for r, t in enumerate(order):
        rank[t] = r
    all_buffers, bindex = _sram_buffers(program)
    engines = engine_names(target)
    in_channels = max(1, target.dma_channels - 1)
    infos = {d.index: d for d in program.dispatches}
    mac_cache: dict[tuple[int, tuple[int, ...]], int] = {}
    templates: dict[tuple, _Template] = {}
    task_dispatch, task_deps, task_tpl, task_engines = [], [], [], []
    n_in = 0
    for t in program.tasks:
        key = (id(t.steps), t.dispatch, t.tile_sizes)  # the program keeps t.steps alive
        tpl = templates.get(key)
        if tpl is None:
            tpl = templates[key] = _template(program, target, t, infos.get(t.dispatch), bindex,
                                             mac_cache)
        task_tpl.append(tpl)
        task_dispatch.append(t.dispatch)
        deps = t.deps
        # sorted and unique; the scheduler's pairs already are (the common case)
        if len(deps) > 1 and not (len(deps) == 2 and deps[0] < deps[1]):
            deps = tuple(sorted(set(deps)))
        task_deps.append(deps)
        if tpl.loads:
            phase = n_in % in_channels
            eng = tpl.by_phase.get(phase)
            if eng is None:
                rr = iter(range(phase, phase + tpl.loads))
                eng = tpl.by_phase[phase] = tuple(next(rr) % in_channels if e < 0 else e
                                                  for e in tpl.engines)
            n_in += tpl.loads
            task_engines.append(eng)
        else:
            task_engines.append(tpl.engines)
    # The step columns, concatenated from the templates at C speed.
    def column(name: str) -> list:
        return list(chain.from_iterable(map(attrgetter(name), task_tpl)))

    n_steps = np.fromiter(map(len, map(attrgetter("kinds"), task_tpl)), np.int64, len(task_tpl))
    n_groups = np.fromiter(map(len, map(attrgetter("group_starts"), task_tpl)), np.int64,
                           len(task_tpl))
    first_step = np.concatenate(([0], np.cumsum(n_steps)[:-1])) if len(task_tpl) else n_steps
    first_group = np.concatenate(([0], np.cumsum(n_groups)[:-1])) if len(task_tpl) else n_groups
    task_first_step = first_step.tolist()
    task_first_group = first_group.tolist()
    step_task = list(chain.from_iterable(map(repeat, range(len(task_tpl)), n_steps.tolist())))
    step_index = list(chain.from_iterable(map(range, n_steps.tolist())))
    group_of_step = (np.repeat(first_group, n_steps)
                     + np.asarray(column("group_rel"), dtype=np.int64)).tolist()
    group_first = (np.repeat(first_step, n_groups)
                   + np.asarray(column("group_starts"), dtype=np.int64)).tolist()
    step_kind, step_work, step_bytes = column("kinds"), column("work"), column("nbytes")
    step_ops, step_buffers = column("ops"), column("buffers")
    step_engine = list(chain.from_iterable(task_engines))
    # Which steps touch each buffer; its first and last user in execution order.
    buffer_steps, touch_step, touch_buffer = inverse(step_buffers, len(all_buffers))
    if identity:  # ranks are task ids, and each buffer's steps are in order
        first_use = [step_task[x[0]] if x else len(order) for x in buffer_steps]
        last_use = [step_task[x[-1]] if x else -1 for x in buffer_steps]
    else:
        touch_task = np.repeat(np.arange(len(task_tpl), dtype=np.int64), n_steps)[touch_step]
        touch_rank = np.asarray(rank, dtype=np.int64)[touch_task]
        first = np.full(len(all_buffers), len(order), dtype=np.int64)
        last = np.full(len(all_buffers), -1, dtype=np.int64)
        np.minimum.at(first, touch_buffer, touch_rank)
        np.maximum.at(last, touch_buffer, touch_rank)
        first_use, last_use = first.tolist(), last.tolist()
    p = Plan(engines, task_dispatch, task_first_step, task_deps, step_task, step_index,
             step_kind, step_engine, step_work, step_bytes, step_ops, step_buffers, group_of_step,
             group_first, task_first_group, [], [], [], order)
    step_buffers = p.step_buffers
    # Only buffers some step touches take SRAM; they must fit the target.
    used = [b for b in range(len(all_buffers)) if last_use[b] >= 0]
    for b in used:
        bid, off, size = all_buffers[b]
        if off + size > target.sram_bytes:
            raise SimError(program.source or None,
                           f"target {target.name}'s SRAM ({target.sram_bytes} bytes) cannot hold "
                           f"the plan: buffer {bid} needs bytes {off}..{off + size}")
    if len(used) < len(all_buffers):
        renum = {b: i for i, b in enumerate(used)}
        cache = {bufs: tuple(renum[b] for b in bufs) for bufs in set(step_buffers)}
        p.step_buffers = [cache[bufs] for bufs in step_buffers]
    p.buffers = [all_buffers[b] for b in used]
    p.buffer_steps = [buffer_steps[b] for b in used]
    p.buffer_preds = _address_preds(p.buffers, [first_use[b] for b in used],
                                    [last_use[b] for b in used], program.source)
    return p
