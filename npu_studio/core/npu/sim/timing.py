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

Everything is flat lists indexed by step id (plan.py builds them) and a
heap of (time, sequence) events: a 100,000-task program simulates in
about a second, flattening and statistics included. The same program and
target give the same result, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..target import NpuTarget
from .plan import Plan, SimError, inverse


@dataclass
class Timeline:
    """What the event loop found: per step start/end and what released it."""

    start: list[int]
    end: list[int]
    cause: list[int]  # step whose end let this step start last (-1: none)
    alloc: list[int]  # per SRAM buffer
    free: list[int]


def _engine_queues(plan: Plan, n_engines: int) -> list[list[int]]:
    """Each engine's steps in execution order (tasks in `plan.order`, steps in order)."""
    n_steps = len(plan.step_task)
    if plan.order == list(range(len(plan.order))):
        seq = np.arange(n_steps, dtype=np.int64)
    else:
        first = np.asarray(plan.task_first_step + [n_steps], dtype=np.int64)
        order = np.asarray(plan.order, dtype=np.int64)
        counts = first[order + 1] - first[order]
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(counts) - counts, counts)
        seq = np.repeat(first[order], counts) + offsets
    engine = plan.array("step_engine")[seq]
    return [seq[engine == e].tolist() for e in range(n_engines)]


def run(plan: Plan, target: NpuTarget) -> Timeline:
    n_steps = len(plan.step_task)
    n_tasks = len(plan.task_dispatch)
    n_groups = len(plan.group_first)
    n_engines = len(plan.engines)
    n_dma = target.dma_channels
    setup = target.dma_setup_cycles
    scale = math.lcm(*range(1, n_dma + 1))
    bw = target.dram_bytes_per_cycle * scale  # scaled bytes per cycle, shared

    step_task, step_engine = plan.step_task, plan.step_engine
    step_work, step_buffers, group_of_step = plan.step_work, plan.step_buffers, plan.group_of_step
    group_first = plan.group_first
    task_first_group = plan.task_first_group

    group_end = group_first[1:] + [n_steps]
    group_left = np.diff(np.asarray(group_first + [n_steps], dtype=np.int64)).tolist()
    task_last_group = [g - 1 for g in task_first_group[1:]] + ([n_groups - 1] if n_tasks else [])
    task_waiting = [len(d) for d in plan.task_deps]
    # the tasks depending on task t: dependents[dep_first[t]:dep_first[t + 1]], in task order
    n_deps = np.fromiter(map(len, plan.task_deps), np.int64, n_tasks)
    dep_of = np.fromiter(chain.from_iterable(plan.task_deps), np.int64, int(n_deps.sum()))
    dependents = np.repeat(np.arange(n_tasks, dtype=np.int64), n_deps)[
        np.argsort(dep_of, kind="stable")].tolist()
    dep_first = np.concatenate(([0], np.cumsum(np.bincount(dep_of, minlength=n_tasks)))).tolist()

    buf_steps = plan.buffer_steps
    buf_left = [len(x) for x in buf_steps]
    buf_waiting = [len(p) for p in plan.buffer_preds]
    buf_succs = inverse(plan.buffer_preds, len(plan.buffers))[0]
    # wait[s]: conditions still open: its group's turn (1) + its buffers not yet allocated.
    late = [buf_steps[b] for b, w in enumerate(buf_waiting) if w]
    wait = (1 + np.bincount(np.fromiter(chain.from_iterable(late), np.int64),
                            minlength=n_steps)).tolist()
    alloc = [-1 if w else 0 for w in buf_waiting]
    free = [-1] * len(plan.buffers)

    queues = _engine_queues(plan, n_engines)
    for q in queues:
        q.append(-1)  # sentinel: never equal to a step, never ready
    head = [0] * n_engines
    busy = [False] * n_engines

    start = [-1] * n_steps
    end = [-1] * n_steps
    cause = [-1] * n_steps
    # (time, sequence, code): code < n_steps: the step ends; ~step: a DMA's setup is over and
    # it joins the DRAM pool; n_steps: a transfer in the pool completes.
    events: list[tuple[int, int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    seq = 0
    pool: dict[int, int] = {}  # DMA step -> scaled bytes left
    pool_time = 0
    pending: tuple[int, int, int] | None = None  # the pool's next completion event
    POOL = n_steps
    now = 0

    # A step's first event: a DMA's setup ends (then it joins the pool), any other step ends.
    is_dma = plan.array("step_engine") < n_dma
    delay = np.where(is_dma, setup, plan.array("step_work")).tolist()
    first_event = np.where(is_dma, ~np.arange(n_steps), np.arange(n_steps)).tolist()

    def begin(e: int, x: int, c: int) -> None:
        nonlocal seq
        busy[e] = True
        head[e] += 1
        start[x] = now
        cause[x] = c
        seq += 1
        push(events, (now + delay[x], seq, first_event[x]))

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
        for u in dependents[dep_first[t]:dep_first[t + 1]]:
            w = task_waiting[u] - 1
            task_waiting[u] = w
            if not w:  # task_ready(u, c), inlined: hot
                g = task_first_group[u]
                if g <= task_last_group[u]:
                    release_group(g, c)
                else:
                    task_done(u, c)

    def finish(x: int) -> None:
        nonlocal seq
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
        y = queues[e][head[e]]
        if y >= 0 and not wait[y]:  # begin(e, y, x), inlined: hot
            head[e] += 1
            start[y] = now
            cause[y] = x
            seq += 1
            push(events, (now + delay[y], seq, first_event[y]))
        else:
            busy[e] = False

    for t in plan.order:
        if not task_waiting[t]:
            task_ready(t, -1)

    while events or pending is not None:
        # The pool's next completion waits outside the heap until it is due: a
        # later change of the pool replaces it (two loads often join at once).
        if pending is not None and (not events or pending < events[0]):
            now, _, code = pending
            pending = None
        else:
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
        if pool:
            seq += 1
            pending = (now + max(0, -(-min(pool.values()) // (bw // len(pool)))), seq, POOL)
        else:
            pending = None

    if n_steps and min(end) < 0:
        stuck = next(s for s in range(n_steps) if end[s] < 0)
        raise SimError(None, f"simulation deadlocked: step {plan.step_index[stuck]} of task "
                       f"{step_task[stuck]} never ran (engine order against dependencies)")
    return Timeline(start, end, cause, alloc, free)
