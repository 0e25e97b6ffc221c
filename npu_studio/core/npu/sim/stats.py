"""Statistics of a simulated timeline, assembled into a SimResult.

Utilization per engine, overlap of DMA and compute, per-dispatch
numbers (span, MAC utilization, DRAM traffic, SRAM, bound), SRAM
occupancy over time and the critical path. Pure functions over the
columns of `plan.Plan` and the lists of `timing.Timeline`.
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np

from ..program.npu_ir import NpuProgram
from ..target.target import NpuTarget
from .results import (
    Column, DispatchStats, Overlap, SimResult, SramAllocation, StepTable, TaskTable, column,
)
from .plan import COMPUTE, CPU, DMA_COPY, DMA_IN, DMA_OUT, Plan, SimError
from .native import cause_chain
from .timing import Timeline


def _union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Cycles covered by the union of [start, end) intervals."""
    keep = end > start
    start, end = start[keep], end[keep]
    if not len(start):
        return 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    # a new covered segment begins where an interval starts after all earlier ones ended
    new = np.empty(len(start), dtype=bool)
    new[0] = True
    new[1:] = start[1:] > reach[:-1]
    firsts = np.flatnonzero(new)
    ends = np.maximum.reduceat(end, firsts)
    return int((ends - start[firsts]).sum())


def overlap(engine: np.ndarray, start: np.ndarray, end: np.ndarray, n_dma: int,
            total: int) -> Overlap:
    """Cycles with only DMA busy, only compute (MAC, vector, CPU), both, none."""
    is_dma = engine < n_dma
    dma = _union_length(start[is_dma], end[is_dma])
    comp = _union_length(start[~is_dma], end[~is_dma])
    either = _union_length(start, end)
    both = dma + comp - either
    return Overlap(dma_only=dma - both, compute_only=comp - both, both=both, idle=total - either)


def sram_series(buffers: list[tuple[str, int, int]], alloc: list[int], free: list[int], capacity: int,
                source: str):
    changes: dict[int, int] = {}
    for (_, _, size), a, f in zip(buffers, alloc, free):
        changes[a] = changes.get(a, 0) + size
        changes[f] = changes.get(f, 0) - size
    times = sorted(changes)
    used = list(accumulate(changes[t] for t in times))
    peak = max(used, default=0)
    if peak > capacity:  # cannot happen with a valid plan; a broken one must not pass unseen
        raise SimError(source or None, f"SRAM in use reached {peak} bytes, target has {capacity}")
    return tuple(times), tuple(used), peak


def critical_path(plan: Plan, tl: Timeline, end: np.ndarray) -> tuple[int, ...]:
    """Tasks along the chain of steps that released each other, ending at the
    last step to end (the first of them in program order: argmax's tie rule)."""
    if not len(end):
        return ()
    s = int(np.argmax(end))
    cause = tl.cause
    found = cause_chain(cause, s) if isinstance(cause, np.ndarray) else None  # C, when the C loop ran
    if found is not None:
        chain = found[::-1]  # first to last
    else:
        if not isinstance(cause, list):
            cause = np.asarray(cause).tolist()
        back = [s]
        walk = back.append
        while s >= 0:  # a step's cause ended before it started: the walk ends at -1
            s = cause[s]
            walk(s)
        chain = back[-2::-1]  # first to last, without the -1
    tasks = plan.step_task[chain]
    keep = np.ones(len(tasks), dtype=bool)
    keep[1:] = tasks[1:] != tasks[:-1]  # a task's consecutive steps name it once
    return tuple(tasks[keep].tolist())


def dispatch_stats(program: NpuProgram, target: NpuTarget, plan: Plan, cols: dict,
                   task_start: np.ndarray, task_end: np.ndarray) -> tuple[DispatchStats, ...]:
    task_disp = plan.task_dispatch
    n_disp = int(task_disp.max()) + 1 if len(task_disp) else 0
    step_disp = task_disp[cols["task"]]
    kind, dur = cols["kind"], cols["end"] - cols["start"]
    on_mac = cols["engine"] == target.dma_channels

    def per_dispatch(mask, values) -> list[int]:
        return np.bincount(step_disp[mask], weights=values[mask], minlength=n_disp).astype(np.int64).tolist()

    read = per_dispatch(kind == DMA_IN, cols["bytes"])
    written = per_dispatch(kind == DMA_OUT, cols["bytes"])
    # a DRAM-to-DRAM transfer both reads and writes; its dispatch knows how much of each
    copied = per_dispatch(kind == DMA_COPY, cols["bytes"])
    for info in program.dispatches:
        if info.index < n_disp and copied[info.index]:
            read[info.index] += info.transfer_read
            written[info.index] += copied[info.index] - info.transfer_read
    compute = per_dispatch((kind == COMPUTE) | (kind == CPU), dur)
    mac_cycles = per_dispatch(on_mac, dur)
    macs = per_dispatch(on_mac, cols["ops"])
    first = np.full(n_disp, np.iinfo(np.int64).max)
    last = np.zeros(n_disp, dtype=np.int64)
    np.minimum.at(first, task_disp, task_start)
    np.maximum.at(last, task_disp, task_end)
    has_tasks = np.bincount(task_disp, minlength=n_disp) > 0
    sizes = {b.id: b.size for b in program.buffers}
    sram = {d.index: 0 for d in program.dispatches}
    for b in program.buffers:  # SRAM slots are named s<dispatch>.<operand>.<slot>
        if b.placement == "sram" and b.id.startswith("s") and "." in b.id:
            d = b.id[1:].split(".", 1)[0]
            if d.isdigit() and int(d) in sram:
                sram[int(d)] += b.size
    units = target.mac_rows * target.mac_cols
    out = []
    for info in program.dispatches:
        i = info.index
        if i >= n_disp or not has_tasks[i]:
            continue
        rd, wr = read[i], written[i]
        if not info.legal:  # the CPU reads its inputs and writes its outputs in DRAM
            rd = sum(sizes.get(b, 0) for b in info.inputs)
            wr = sum(sizes.get(b, 0) for b in info.outputs)
            bound = "cpu"
        else:
            memory = -(-(rd + wr) // target.dram_bytes_per_cycle)
            bound = "compute" if compute[i] >= memory else "memory"
        begin, finish = int(first[i]), int(last[i])
        cycles = finish - begin
        out.append(DispatchStats(
            index=i, start=begin, end=finish, cycles=cycles, mac_cycles=mac_cycles[i],
            mac_utilization=macs[i] / (units * target.mac_rate(info.dtype) * cycles)
            if cycles and macs[i] else 0.0,
            dram_read=rd, dram_written=wr, sram_peak=sram.get(i, 0), bound=bound))
    return tuple(out)


def _column(values: np.ndarray) -> Column:
    return column(np.ascontiguousarray(values))


def build_result(program: NpuProgram, target: NpuTarget, plan: Plan, tl: Timeline) -> SimResult:
    n_steps = len(plan.step_task)
    cols = {
        "task": plan.step_task,
        "kind": plan.step_kind,
        "engine": plan.step_engine,
        "start": np.asarray(tl.start, dtype=np.int64),
        "end": np.asarray(tl.end, dtype=np.int64),
        "bytes": plan.step_bytes,
        "ops": plan.step_ops,
    }
    n_tasks = len(plan.task_dispatch)
    firsts = plan.task_first_step
    if n_steps and n_tasks and np.all(np.diff(np.append(firsts, n_steps)) > 0):
        task_start = np.minimum.reduceat(cols["start"], firsts)
        task_end = np.maximum.reduceat(cols["end"], firsts)
    else:  # some task has no step: it takes no time, at 0
        bounds = firsts.tolist() + [n_steps]
        start, end = cols["start"].tolist(), cols["end"].tolist()
        task_start = np.asarray([min(start[bounds[t]:bounds[t + 1]], default=0)
                                 for t in range(n_tasks)], dtype=np.int64)
        task_end = np.asarray([max(end[bounds[t]:bounds[t + 1]], default=0)
                               for t in range(n_tasks)], dtype=np.int64)
    total = int(cols["end"].max()) if n_steps else 0
    busy = np.bincount(cols["engine"], weights=cols["end"] - cols["start"],
                       minlength=len(plan.engines)).astype(np.int64).tolist()
    alloc, free = np.asarray(tl.alloc, dtype=np.int64).tolist(), np.asarray(tl.free, dtype=np.int64).tolist()
    times, used, peak = sram_series(plan.buffers, alloc, free, target.sram_bytes, program.source)
    return SimResult(
        target=target.name, clock_mhz=target.clock_mhz, total_cycles=total,
        engines=plan.engines, engine_busy=tuple(busy),
        steps=StepTable(_column(plan.step_task), _column(plan.step_index), _column(plan.step_kind),
                        _column(plan.step_engine), _column(cols["start"]), _column(cols["end"]),
                        _column(plan.step_bytes), _column(plan.step_ops)),
        tasks=TaskTable(_column(plan.task_dispatch), _column(task_start), _column(task_end),
                        _column(plan.task_first_step)),
        sram_capacity=target.sram_bytes, sram_peak=peak, sram_times=times, sram_bytes=used,
        allocations=tuple(SramAllocation(b, off, size, a, f)
                          for (b, off, size), a, f in zip(plan.buffers, alloc, free)),
        dispatches=dispatch_stats(program, target, plan, cols, task_start, task_end),
        overlap=overlap(cols["engine"], cols["start"], cols["end"], target.dma_channels, total),
        critical_path=critical_path(plan, tl, cols["end"]),
        source=program.source,
    )
