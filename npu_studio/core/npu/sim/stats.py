"""Statistics of a simulated timeline, assembled into a SimResult.

Utilization per engine, overlap of DMA and compute, per-dispatch
numbers (span, MAC utilization, DRAM traffic, SRAM, bound), SRAM
occupancy over time and the critical path. Pure functions over the flat
lists of `timing.Plan` and `timing.Timeline`.
"""

from __future__ import annotations

import heapq
from itertools import accumulate

from ..npu_ir import NpuProgram
from ..target import NpuTarget
from .results import (
    DispatchStats, Overlap, SimResult, SramAllocation, StepTable, TaskTable,
)
from .timing import COMPUTE, CPU, DMA_COPY, DMA_IN, DMA_OUT, Plan, SimError, Timeline


def _union(intervals) -> list[tuple[int, int]]:
    """Union of (start, end) intervals given sorted by start."""
    out: list[list[int]] = []
    for s, e in intervals:
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def _length(iv) -> int:
    return sum(e - s for s, e in iv)


def _intersection(a, b) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(plan: Plan, tl: Timeline, n_dma: int, total: int) -> Overlap:
    """Cycles with only DMA busy, only compute (MAC, vector, CPU), both, none."""
    per_engine: list[list[tuple[int, int]]] = [[] for _ in plan.engines]
    for s, e in enumerate(plan.step_engine):
        per_engine[e].append((tl.start[s], tl.end[s]))
    for iv in per_engine:
        iv.sort()
    dma = _union(heapq.merge(*per_engine[:n_dma]))
    comp = _union(heapq.merge(*per_engine[n_dma:]))
    both = _intersection(dma, comp)
    d, c = _length(dma), _length(comp)
    return Overlap(dma_only=d - both, compute_only=c - both, both=both,
                   idle=total - (d + c - both))


def sram_series(plan: Plan, tl: Timeline, capacity: int, source: str):
    changes: dict[int, int] = {}
    for (_, _, size), a, f in zip(plan.buffers, tl.alloc, tl.free):
        changes[a] = changes.get(a, 0) + size
        changes[f] = changes.get(f, 0) - size
    times = sorted(changes)
    used = list(accumulate(changes[t] for t in times))
    peak = max(used, default=0)
    if peak > capacity:  # cannot happen with a valid plan; a broken one must not pass unseen
        raise SimError(source or None, f"SRAM in use reached {peak} bytes, target has {capacity}")
    return tuple(times), tuple(used), peak


def critical_path(plan: Plan, tl: Timeline) -> tuple[int, ...]:
    """Tasks along the chain of steps that released each other, ending at the last step."""
    if not tl.end:
        return ()
    s = max(range(len(tl.end)), key=lambda i: (tl.end[i], -i))
    tasks: list[int] = []
    while s >= 0:
        t = plan.step_task[s]
        if not tasks or tasks[-1] != t:
            tasks.append(t)
        s = tl.cause[s]
    return tuple(reversed(tasks))


def dispatch_stats(program: NpuProgram, target: NpuTarget, plan: Plan, tl: Timeline,
                   task_start: list[int], task_end: list[int]) -> tuple[DispatchStats, ...]:
    acc: dict[int, list[int]] = {}  # start, end, mac cycles, macs, compute cycles, read, written
    for t, d in enumerate(plan.task_dispatch):
        a = acc.get(d)
        if a is None:
            a = acc[d] = [task_start[t], task_end[t], 0, 0, 0, 0, 0]
        a[0] = min(a[0], task_start[t])
        a[1] = max(a[1], task_end[t])
    mac = target.dma_channels
    infos = {d.index: d for d in program.dispatches}
    for s, k in enumerate(plan.step_kind):
        a = acc[plan.task_dispatch[plan.step_task[s]]]
        if k == DMA_IN:
            a[5] += plan.step_bytes[s]
        elif k == DMA_COPY:  # read and written: the transfer knows how much of each
            read = infos[plan.task_dispatch[plan.step_task[s]]].transfer_read
            a[5] += read
            a[6] += plan.step_bytes[s] - read
        elif k == DMA_OUT:
            a[6] += plan.step_bytes[s]
        elif k in (COMPUTE, CPU):
            cycles = tl.end[s] - tl.start[s]
            a[4] += cycles
            if plan.step_engine[s] == mac:
                a[2] += cycles
                a[3] += plan.step_ops[s]
    sizes = {b.id: b.size for b in program.buffers}
    sram = {d.index: 0 for d in program.dispatches}
    for b in program.buffers:
        if b.placement == "sram" and b.id.startswith("s") and "." in b.id:
            d = b.id[1:].split(".", 1)[0]
            if d.isdigit() and int(d) in sram:
                sram[int(d)] += b.size
    units = target.mac_rows * target.mac_cols
    out = []
    for info in program.dispatches:
        a = acc.get(info.index)
        if a is None:
            continue
        start, end, mac_cycles, macs, compute, read, written = a
        if not info.legal:  # the CPU reads its inputs and writes its outputs in DRAM
            read = sum(sizes.get(b, 0) for b in info.inputs)
            written = sum(sizes.get(b, 0) for b in info.outputs)
            bound = "cpu"
        else:
            memory = -(-(read + written) // target.dram_bytes_per_cycle)
            bound = "compute" if compute >= memory else "memory"
        cycles = end - start
        out.append(DispatchStats(
            index=info.index, start=start, end=end, cycles=cycles, mac_cycles=mac_cycles,
            mac_utilization=macs / (units * cycles) if cycles and macs else 0.0,
            dram_read=read, dram_written=written, sram_peak=sram.get(info.index, 0), bound=bound))
    return tuple(out)


def build_result(program: NpuProgram, target: NpuTarget, plan: Plan, tl: Timeline) -> SimResult:
    n_tasks = len(plan.task_dispatch)
    n_steps = len(plan.step_task)
    bounds = plan.task_first_step + [n_steps]
    task_start = [min(tl.start[bounds[t]:bounds[t + 1]], default=0) for t in range(n_tasks)]
    task_end = [max(tl.end[bounds[t]:bounds[t + 1]], default=0) for t in range(n_tasks)]
    total = max(tl.end, default=0)
    busy = [0] * len(plan.engines)
    for s, e in enumerate(plan.step_engine):
        busy[e] += tl.end[s] - tl.start[s]
    times, used, peak = sram_series(plan, tl, target.sram_bytes, program.source)
    return SimResult(
        target=target.name, clock_mhz=target.clock_mhz, total_cycles=total,
        engines=plan.engines, engine_busy=tuple(busy),
        steps=StepTable(tuple(plan.step_task), tuple(plan.step_index), tuple(plan.step_kind),
                        tuple(plan.step_engine), tuple(tl.start), tuple(tl.end),
                        tuple(plan.step_bytes), tuple(plan.step_ops)),
        tasks=TaskTable(tuple(plan.task_dispatch), tuple(task_start), tuple(task_end),
                        tuple(plan.task_first_step)),
        sram_capacity=target.sram_bytes, sram_peak=peak, sram_times=times, sram_bytes=used,
        allocations=tuple(SramAllocation(b, off, size, a, f)
                          for (b, off, size), a, f in zip(plan.buffers, tl.alloc, tl.free)),
        dispatches=dispatch_stats(program, target, plan, tl, task_start, task_end),
        overlap=overlap(plan, tl, target.dma_channels, total),
        critical_path=critical_path(plan, tl),
        source=program.source,
    )
