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

Everything is flat lists indexed by step id (plan.py builds them). Each
step counts the conditions it still waits for (its group's turn, its
engine's turn, its buffers); whoever clears the last one starts it.
Events are single integers time | sequence | code in a heap, taken in
time order and, at equal times, in the order they were made. The same
loop runs in C when a compiler is at hand (sim/native.py; tests check the
two give the same timeline on random programs): a 100,000-task program
then simulates in about 0.25 s, flattening and statistics included
(benchmarks/npu_sim.py); the same program and target give the same
result, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from ..target.target import NpuTarget
from .plan import Plan, SimError, inverse


@dataclass
class Timeline:
    """What the event loop found: per step start/end and what released it. int64 arrays from the C loop,
    lists from the Python one (a list of a few hundred thousand ints costs more than the C loop)."""

    start: list[int] | np.ndarray
    end: list[int] | np.ndarray
    cause: list[int] | np.ndarray  # step whose end let this step start last (-1: none)
    alloc: list[int] | np.ndarray  # per SRAM buffer
    free: list[int] | np.ndarray


def _engine_queues(plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Every engine's steps in execution order (tasks in `plan.order`, steps in
    order), one engine after the other, and the engine of each."""
    n_steps = len(plan.step_task)
    if plan.order == list(range(len(plan.order))):
        seq = np.arange(n_steps, dtype=np.int64)
    else:
        first = np.append(plan.task_first_step, n_steps)
        order = np.asarray(plan.order, dtype=np.int64)
        counts = first[order + 1] - first[order]
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(counts) - counts, counts)
        seq = np.repeat(first[order], counts) + offsets
    engine = plan.step_engine[seq].astype(np.int16)  # a few engines: a radix sort
    by_engine = np.argsort(engine, kind="stable")
    return seq[by_engine], engine[by_engine]


class _Columns:
    """The loop's starting state as int64 arrays, shared by the Python loop and the native one."""

    def __init__(self, plan: Plan, target: NpuTarget):
        n_steps = self.n_steps = len(plan.step_task)
        n_tasks = len(plan.order)
        n_dma = self.n_dma = target.dma_channels
        self.scale = math.lcm(*range(1, n_dma + 1))
        self.bw = target.dram_bytes_per_cycle * self.scale  # scaled bytes per cycle, shared
        step_engine = plan.step_engine
        is_dma = step_engine < n_dma
        # a step's first event, relative to its start: its end, or for a transfer its setup's end
        self.delay = np.where(is_dma, target.dma_setup_cycles, plan.step_work).astype(np.int64)
        self.code = np.arange(n_steps, dtype=np.int64) + np.where(is_dma, n_steps, 0)

        n_groups = len(plan.group_first)
        self.group_first = np.append(plan.group_first, n_steps).astype(np.int64)
        self.group_left = np.diff(self.group_first)
        # after group g: the next group of its task, or ~task when g was the task's last
        group_task = plan.step_task[plan.group_first]
        last = np.ones(n_groups, dtype=bool)
        last[:-1] = group_task[1:] != group_task[:-1]
        self.group_next = np.where(last, ~group_task, np.arange(1, n_groups + 1)).astype(np.int64)
        firsts = np.append(plan.task_first_step, n_steps)
        self.task_group = np.where(firsts[1:] > firsts[:-1],  # -1: a task without steps
                                   plan.task_first_group, -1).astype(np.int64)
        self.task_waiting = np.asarray(plan.dep_count, dtype=np.int64)
        # the tasks depending on task t: dependents[dep_first[t]:dep_first[t + 1]], in task order
        dep_of = plan.dep_flat
        self.dependents = np.repeat(np.arange(n_tasks, dtype=np.int64), plan.dep_count)[
            np.argsort(dep_of, kind="stable")]
        self.dep_first = np.concatenate(
            ([0], np.cumsum(np.bincount(dep_of, minlength=n_tasks)))).astype(np.int64)

        self.buf_waiting = np.fromiter(map(len, plan.buffer_preds), np.int64, len(plan.buffers))
        # wait[s]: conditions still open: its group's turn, its engine's turn (the step
        # before it on its engine ended), its buffers not yet allocated.
        late = self.buf_waiting > 0
        wait = 2 + np.bincount(plan.touch_step[late[plan.touch_buffer]], minlength=n_steps)
        queued, engine = _engine_queues(plan)
        next_on_engine = np.full(n_steps, -1, dtype=np.int64)
        same = engine[1:] == engine[:-1]
        next_on_engine[queued[:-1][same]] = queued[1:][same]
        heads = np.ones(n_steps, dtype=bool)
        heads[1:] = ~same
        wait[queued[heads]] -= 1  # each engine is free for its first step
        self.wait = wait.astype(np.int64)
        self.next_on_engine = next_on_engine


class _State:
    """The simulation's mutable lists and the constants of its event encoding."""

    def __init__(self, plan: Plan, target: NpuTarget, cols: _Columns | None = None):
        cols = cols or _Columns(plan, target)
        n_steps = self.n_steps = cols.n_steps
        self.n_dma, self.scale, self.bw = cols.n_dma, cols.scale, cols.bw

        # Event key: time << TIME_SHIFT | sequence << CODE_BITS | code. Sequence numbers
        # count heap pushes (one per step) and pool completions (at most two per transfer),
        # so they fit; code < n_steps: the step ends, n_steps + x: DMA x's setup is over.
        code_bits = (2 * n_steps + 1).bit_length()
        self.time_shift = code_bits + (4 * n_steps + 4).bit_length()
        self.seq_one = 1 << code_bits
        self.code_mask = (1 << code_bits) - 1
        # no simulation reaches 2**256 cycles; its code says "past every step"
        self.sentinel = (1 << (256 + self.time_shift)) | self.code_mask
        delay, code = cols.delay, cols.code
        if n_steps and int(delay.max()).bit_length() + self.time_shift < 63:
            event = ((delay << self.time_shift) | code).tolist()
        else:
            event = [(d << self.time_shift) | c for d, c in zip(delay.tolist(), code.tolist())]
        self.event = event  # a step's first event, relative to its start time

        self.group_first = cols.group_first.tolist()
        self.group_left = cols.group_left.tolist()
        self.group_next = cols.group_next.tolist()
        self.task_group = cols.task_group.tolist()
        self.task_waiting = cols.task_waiting.tolist()
        self.dependents = cols.dependents.tolist()
        self.dep_first = cols.dep_first.tolist()

        buf_steps = self.buf_steps = plan.buffer_steps()
        self.buf_left = [len(x) for x in buf_steps]
        self.buf_waiting = cols.buf_waiting.tolist()
        self.buf_succs = inverse(plan.buffer_preds, len(plan.buffers))[0]
        self.alloc = [-1 if w else 0 for w in self.buf_waiting]
        self.free = [-1] * len(plan.buffers)
        self.wait = cols.wait.tolist()
        self.next_on_engine = cols.next_on_engine.tolist()

        self.start = [-1] * n_steps
        self.end = [-1] * n_steps
        self.cause = [-1] * n_steps
        self.events = [self.sentinel]

    def begin_group(self, g: int, c: int, now: int, seq: int) -> int:
        """Group g's turn has come (released by step c at `now`); returns the sequence."""
        wait, start, cause, event, events = self.wait, self.start, self.cause, self.event, self.events
        base = now << self.time_shift
        for y in range(self.group_first[g], self.group_first[g + 1]):
            w = wait[y] - 1
            wait[y] = w
            if not w:
                start[y] = now
                cause[y] = c
                seq += self.seq_one
                heapq.heappush(events, base + event[y] + seq)
        return seq

    def task_ready(self, t: int, c: int, now: int, seq: int) -> int:
        g = self.task_group[t]
        if g >= 0:
            return self.begin_group(g, c, now, seq)
        return self.task_done(t, c, now, seq)  # a task without steps is done at once

    def task_done(self, t: int, c: int, now: int, seq: int) -> int:
        task_waiting = self.task_waiting
        for u in self.dependents[self.dep_first[t]:self.dep_first[t + 1]]:
            w = task_waiting[u] - 1
            task_waiting[u] = w
            if not w:
                seq = self.task_ready(u, c, now, seq)
        return seq


def run(plan: Plan, target: NpuTarget, native: bool = True) -> Timeline:
    """The timeline of `plan` on `target`. With `native` (and a C compiler, see sim/native.py) the
    loop runs in C, else in Python: the same steps in the same order, the same timeline bit for bit."""
    cols = _Columns(plan, target)
    if native:
        from .native import run_native

        found = run_native(plan, cols)
        if found is not None:
            return _checked(plan, Timeline(*found))
    st = _State(plan, target, cols)
    seq = 0
    # listed first: a task without steps readies its dependents at once, and each task is
    # readied once
    for t in [t for t in plan.order if not st.task_waiting[t]]:
        seq = st.task_ready(t, -1, 0, seq)
    _event_loop(st, plan.step_work.tolist(), plan.step_buffers(), plan.group_of_step.tolist(), seq)
    return _checked(plan, Timeline(st.start, st.end, st.cause, st.alloc, st.free))


def _checked(plan: Plan, timeline: Timeline) -> Timeline:
    end = np.asarray(timeline.end)
    if len(end) and end.min() < 0:
        stuck = int(np.argmax(end < 0))
        raise SimError(None, f"simulation deadlocked: step {int(plan.step_index[stuck])} of task "
                       f"{int(plan.step_task[stuck])} never ran (engine order against dependencies)")
    return timeline


def _event_loop(st: _State, step_work: list[int], step_buffers: list[tuple[int, ...]],
                group_of_step: list[int], seq: int) -> None:
    # Every name the loop touches is a local: the loop runs once per event.
    n_steps, scale, bw = st.n_steps, st.scale, st.bw
    shift, one, code_mask, sentinel = st.time_shift, st.seq_one, st.code_mask, st.sentinel
    wait, start, end, cause, event, events = st.wait, st.start, st.end, st.cause, st.event, st.events
    next_on_engine = st.next_on_engine
    group_first, group_left, group_next = st.group_first, st.group_left, st.group_next
    task_group, task_waiting, dependents, dep_first = (st.task_group, st.task_waiting,
                                                      st.dependents, st.dep_first)
    buf_left, buf_succs, buf_waiting, buf_steps = (st.buf_left, st.buf_succs, st.buf_waiting,
                                                   st.buf_steps)
    alloc, free = st.alloc, st.free
    task_done = st.task_done
    push, pop = heapq.heappush, heapq.heappop

    # DMA transfers moving bytes share the bandwidth equally, so all drain alike: each
    # keeps the `drained` level at which it completes; `low` is the lowest of them.
    pool: dict[int, int] = {}
    shares = [0] + [bw // k for k in range(1, st.n_dma + 1)]  # by transfers in the pool
    drained = pool_time = share = 0
    low = sentinel
    no_pending = sentinel + 1
    pending = no_pending  # the pool's next completion, outside the heap until it is due:
    # a later change of the pool replaces it (two loads often join at once)
    while True:
        if pending < events[0]:
            now = pending >> shift
            pending = no_pending
            drained += (now - pool_time) * share
            pool_time = now
            done = []
            for y, level in pool.items():
                if level <= drained:
                    done.append(y)
            for y in done:
                del pool[y]
            pooled = True
        else:
            key = pop(events)
            x = key & code_mask
            now = key >> shift
            if x >= n_steps:
                x -= n_steps
                if x >= n_steps:
                    break  # the sentinel: every event is done
                work = step_work[x]
                if work:  # setup over: the transfer starts moving bytes
                    drained += (now - pool_time) * share
                    pool_time = now
                    level = pool[x] = drained + work * scale
                    if level < low:
                        low = level
                    share = shares[len(pool)]
                    seq += one
                    wait_cycles = -((drained - low) // share)
                    pending = ((now + wait_cycles if wait_cycles > 0 else now) << shift) + seq
                    continue
            done = (x,)
            pooled = False
        base = now << shift
        for x in done:  # step x ends
            end[x] = now
            for b in step_buffers[x]:
                left = buf_left[b] - 1
                buf_left[b] = left
                if not left:
                    free[b] = now
                    for nb in buf_succs[b]:
                        w = buf_waiting[nb] - 1
                        buf_waiting[nb] = w
                        if not w:
                            alloc[nb] = now
                            for y in buf_steps[nb]:
                                w = wait[y] - 1
                                wait[y] = w
                                if not w:
                                    start[y] = now
                                    cause[y] = x
                                    seq += one
                                    push(events, base + event[y] + seq)
            g = group_of_step[x]
            left = group_left[g] - 1
            group_left[g] = left
            if not left:
                g = group_next[g]
                if g < 0:  # the task is done: its dependents may be ready
                    t = ~g
                    for u in dependents[dep_first[t]:dep_first[t + 1]]:
                        w = task_waiting[u] - 1
                        task_waiting[u] = w
                        if not w:
                            g = task_group[u]
                            if g < 0:
                                seq = task_done(u, x, now, seq)
                                continue
                            for y in range(group_first[g], group_first[g + 1]):
                                w = wait[y] - 1
                                wait[y] = w
                                if not w:
                                    start[y] = now
                                    cause[y] = x
                                    seq += one
                                    push(events, base + event[y] + seq)
                else:
                    for y in range(group_first[g], group_first[g + 1]):
                        w = wait[y] - 1
                        wait[y] = w
                        if not w:
                            start[y] = now
                            cause[y] = x
                            seq += one
                            push(events, base + event[y] + seq)
            y = next_on_engine[x]  # the engine is free for its next step
            if y >= 0:
                w = wait[y] - 1
                wait[y] = w
                if not w:
                    start[y] = now
                    cause[y] = x
                    seq += one
                    push(events, base + event[y] + seq)
        if pooled:  # the pool changed: when does its first transfer complete now?
            if pool:
                share = shares[len(pool)]
                low = min(pool.values())
                seq += one
                wait_cycles = -((drained - low) // share)
                pending = ((now + wait_cycles if wait_cycles > 0 else now) << shift) + seq
            else:
                share, low = 0, sentinel
