"""Event-driven timing simulation of an NpuProgram on an NpuTarget.

Engines are resources: each DMA channel, the MAC array, the vector unit
and the CPU (fallback tasks). Every engine runs its steps in program
order. A step starts when
  - its task's dependencies have finished (all their steps),
  - the steps before it in its task have finished (a task's steps run in
    groups: its DMA-ins together, then the compute, then the DMA-outs),
  - its engine is free, and
  - the SRAM buffers it touches are allocated: a buffer gets its planned
    addresses once every buffer that used them earlier has been freed
    (its last step ended).

DMA channels: with two or more, the last channel carries the DMA-outs
and the others take the DMA-ins round-robin, so a tile's store never
queues in front of the next tile's loads; one channel carries both. A
transfer occupies its channel for the target's setup latency, then moves
its bytes; DRAM bandwidth (`dram_bytes_per_cycle`) is shared equally
between the transfers moving data at the same time (four channels do not
give four times the bandwidth). Time is integer cycles; bandwidth shares
are exact integers (remaining bytes are scaled by lcm(1..channels)), a
transfer ends at the first whole cycle its bytes are through.

Everything is flat lists indexed by step id, and a heap of
(time, sequence) events: a 100,000-task program simulates in about a
second. The same program and target give the same result, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

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
    order: list[int]  # execution order of tasks (program order, or a topological one)


def engine_names(target: NpuTarget) -> tuple[str, ...]:
    return tuple(f"dma{c}" for c in range(target.dma_channels)) + ("mac", "vector", "cpu")


def _task_order(program: NpuProgram) -> list[int]:
    """Program order when every dependency points backwards, else a stable
    topological order; SimError names a cycle."""
    n = len(program.tasks)
    for pos, t in enumerate(program.tasks):
        if t.id != pos:
            raise SimError(program.source or None, f"task at position {pos} has id {t.id} "
                           "(task ids must be 0, 1, 2, ... in order)")
        for d in t.deps:
            if not 0 <= d < n:
                raise SimError(program.source or None, f"task {t.id} depends on missing task {d}")
    if all(d < t.id for t in program.tasks for d in t.deps):
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


def build_plan(program: NpuProgram, target: NpuTarget) -> Plan:
    order = _task_order(program)
    identity = order == list(range(len(order)))
    rank = list(range(len(order)))
    for r, t in enumerate(order):
        rank[t] = r
    all_buffers, bindex = _sram_buffers(program)
    first_use = [-1] * len(all_buffers)
    last_use = [-1] * len(all_buffers)
    engines = engine_names(target)
    n_dma = target.dma_channels
    mac, vec, cpu = n_dma, n_dma + 1, n_dma + 2
    in_channels = max(1, n_dma - 1)
    out_channel = n_dma - 1
    infos = {d.index: d for d in program.dispatches}
    mac_cache: dict[tuple[int, tuple[int, ...]], int] = {}
    buf_cache: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[int, ...]] = {}
    task_dispatch, task_first_step, task_deps, task_first_group = [], [], [], []
    rows: list[tuple] = []  # per step: task, index, kind, engine, work, bytes, ops, buffers, group
    append = rows.append
    group_first: list[int] = []
    kind_code = _KIND_CODE
    n_in = 0
    for t in program.tasks:
        tid = t.id
        task_dispatch.append(t.dispatch)
        task_first_step.append(len(rows))
        task_deps.append(tuple(sorted(set(t.deps))) if len(t.deps) > 1 else t.deps)
        task_first_group.append(len(group_first))
        prev_kind = -1
        info = infos.get(t.dispatch)
        r = rank[tid]
        for i, s in enumerate(t.steps):
            kind = kind_code.get(s.kind)
            if kind == DMA_IN or kind == DMA_COPY:
                # a DRAM-to-DRAM copy: its bytes are read and written over the
                # DRAM port (Step.bytes counts both), on a load channel
                engine, work = n_in % in_channels, s.bytes
                n_in += 1
            elif kind == DMA_OUT:
                engine, work = out_channel, s.bytes
            elif kind == CPU:
                engine, work = cpu, cpu_cycles(target, s.ops)
            elif kind is None:
                raise SimError(program.source or None, f"task {tid}: unknown step kind {s.kind!r}")
            elif info is not None and info.kind in MAC_KINDS and t.tile_sizes:
                key = (t.dispatch, t.tile_sizes)
                work = mac_cache.get(key)
                if work is None:
                    reds = tuple(it == "reduction" for it in info.iterator_types)
                    work = mac_cache[key] = mac_cycles(target, info.kind, info.loop_dims, reds,
                                                       t.tile_sizes)
                engine = mac
            else:
                cost = info.vector_cost if info is not None and info.vector_cost else 1
                engine, work = vec, vector_cycles(target, s.ops, cost)
            if kind != prev_kind:
                group_first.append(len(rows))
                prev_kind = kind
            key = (s.srcs, s.dsts)
            bufs = buf_cache.get(key)
            if bufs is None:
                bufs = buf_cache[key] = tuple(sorted({bindex[b] for b in (*s.srcs, *s.dsts)
                                                      if b in bindex}))
            for b in bufs:
                if identity:
                    if first_use[b] < 0:
                        first_use[b] = r
                    last_use[b] = r
                else:
                    if first_use[b] < 0 or r < first_use[b]:
                        first_use[b] = r
                    if r > last_use[b]:
                        last_use[b] = r
            append((tid, i, kind, engine, work, s.bytes, s.ops, bufs, len(group_first) - 1))
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(9)]
    p = Plan(engines, task_dispatch, task_first_step, task_deps, *cols, group_first,
             task_first_group, [], [], order)
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
    p.buffer_preds = _address_preds(p.buffers, [first_use[b] for b in used],
                                    [last_use[b] for b in used], program.source)
    return p


@dataclass
class Timeline:
    """What the event loop found: per step start/end and what released it."""

    start: list[int]
    end: list[int]
    cause: list[int]  # step whose end let this step start last (-1: none)
    alloc: list[int]  # per SRAM buffer
    free: list[int]


def run(plan: Plan, target: NpuTarget) -> Timeline:
    n_steps = len(plan.step_task)
    n_tasks = len(plan.task_dispatch)
    n_groups = len(plan.group_first)
    n_engines = len(plan.engines)
    n_dma = target.dma_channels
    setup = target.dma_setup_cycles
    scale = math.lcm(*range(1, n_dma + 1))
    bw = target.dram_bytes_per_cycle * scale  # scaled bytes per cycle, shared

    step_task, step_kind, step_engine = plan.step_task, plan.step_kind, plan.step_engine
    step_work, step_buffers, group_of_step = plan.step_work, plan.step_buffers, plan.group_of_step
    group_first = plan.group_first
    task_first_group = plan.task_first_group

    group_end = group_first[1:] + [n_steps]
    group_left = [group_end[g] - group_first[g] for g in range(n_groups)]
    task_last_group = [g - 1 for g in task_first_group[1:]] + ([n_groups - 1] if n_tasks else [])
    task_waiting = [len(d) for d in plan.task_deps]
    dependents: list[list[int]] = [[] for _ in range(n_tasks)]
    for t, deps in enumerate(plan.task_deps):
        for d in deps:
            dependents[d].append(t)

    # wait[s]: conditions still open: its group's turn (1) + unallocated buffers.
    wait = [1] * n_steps
    buf_steps: list[list[int]] = [[] for _ in plan.buffers]
    for s, bufs in enumerate(step_buffers):
        for b in bufs:
            buf_steps[b].append(s)
    buf_left = [len(x) for x in buf_steps]
    buf_waiting = [len(p) for p in plan.buffer_preds]
    buf_succs: list[list[int]] = [[] for _ in plan.buffers]
    for b, preds in enumerate(plan.buffer_preds):
        for a in preds:
            buf_succs[a].append(b)
    alloc = [-1] * len(plan.buffers)
    free = [-1] * len(plan.buffers)
    for b in range(len(plan.buffers)):
        if buf_waiting[b]:
            for s in buf_steps[b]:
                wait[s] += 1
        else:
            alloc[b] = 0

    queues: list[list[int]] = [[] for _ in range(n_engines)]
    first_step = plan.task_first_step + [n_steps]
    for t in plan.order:
        for x in range(first_step[t], first_step[t + 1]):
            queues[step_engine[x]].append(x)
    for q in queues:
        q.append(-1)  # sentinel: never equal to a step, never ready
    head = [0] * n_engines
    busy = [False] * n_engines

    start = [-1] * n_steps
    end = [-1] * n_steps
    cause = [-1] * n_steps
    # (time, sequence, code): code < n_steps: the step ends; ~step: a DMA's setup is over and
    # it joins the DRAM pool; >= n_steps: pool event of generation code - n_steps.
    events: list[tuple[int, int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    seq = 0
    pool: dict[int, int] = {}  # DMA step -> scaled bytes left
    pool_time = 0
    pool_gen = 0
    POOL = n_steps
    now = 0

    def begin(e: int, x: int, c: int) -> None:
        nonlocal seq
        busy[e] = True
        head[e] += 1
        start[x] = now
        cause[x] = c
        seq += 1
        if e < n_dma:
            push(events, (now + setup, seq, ~x))
        else:
            push(events, (now + step_work[x], seq, x))

    def release_group(g: int, c: int) -> None:
        for x in range(group_first[g], group_end[g]):
            w = wait[x] - 1
            wait[x] = w
            if not w:
                e = step_engine[x]
                if not busy[e] and queues[e][head[e]] == x:
                    begin(e, x, c)

    def task_ready(t: int, c: int) -> None:
        if task_first_group[t] <= task_last_group[t]:
            release_group(task_first_group[t], c)
        else:  # a task without steps is done as soon as it may start
            task_done(t, c)

    def task_done(t: int, c: int) -> None:
        for u in dependents[t]:
            task_waiting[u] -= 1
            if not task_waiting[u]:
                task_ready(u, c)

    def finish(x: int) -> None:
        end[x] = now
        for b in step_buffers[x]:
            buf_left[b] -= 1
            if not buf_left[b]:
                free[b] = now
                for nb in buf_succs[b]:
                    buf_waiting[nb] -= 1
                    if not buf_waiting[nb]:
                        alloc[nb] = now
                        for y in buf_steps[nb]:
                            w = wait[y] - 1
                            wait[y] = w
                            if not w:
                                e = step_engine[y]
                                if not busy[e] and queues[e][head[e]] == y:
                                    begin(e, y, x)
        g = group_of_step[x]
        left = group_left[g] - 1
        group_left[g] = left
        if not left:
            if g < task_last_group[step_task[x]]:
                release_group(g + 1, x)
            else:
                task_done(step_task[x], x)
        e = step_engine[x]
        busy[e] = False
        y = queues[e][head[e]]
        if y >= 0 and not wait[y]:
            begin(e, y, x)

    for t in plan.order:
        if not task_waiting[t]:
            task_ready(t, -1)

    while events:
        now, _, code = pop(events)
        if code < 0:  # setup over: the transfer starts moving bytes
            x = ~code
            if not step_work[x]:
                finish(x)
                continue
            if pool:
                drained = (now - pool_time) * (bw // len(pool))
                for y in pool:
                    pool[y] -= drained
            pool_time = now
            pool[x] = step_work[x] * scale
        elif code < POOL:
            finish(code)
            continue
        else:
            if code - POOL != pool_gen:
                continue  # superseded by a later change of the pool
            drained = (now - pool_time) * (bw // len(pool))
            pool_time = now
            done = []
            for y in pool:
                left = pool[y] - drained
                pool[y] = left
                if left <= 0:
                    done.append(y)
            for y in done:
                del pool[y]
            for y in done:
                finish(y)
        # the pool changed: when does its first transfer complete now?
        pool_gen += 1
        if pool:
            seq += 1
            push(events, (now + max(0, -(-min(pool.values()) // (bw // len(pool)))), seq,
                          POOL + pool_gen))

    if n_steps and min(end) < 0:
        stuck = next(s for s in range(n_steps) if end[s] < 0)
        raise SimError(None, f"simulation deadlocked: step {plan.step_index[stuck]} of task "
                       f"{step_task[stuck]} never ran (engine order against dependencies)")
    return Timeline(start, end, cause, alloc, free)
