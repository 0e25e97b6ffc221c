"""Invariants every simulated schedule must satisfy, checked from the
program and the result alone (shared by the simulator tests)."""

from __future__ import annotations

from npu_studio.core.npu.sim.results import STEP_KINDS


def check_schedule(program, result):
    st, tk = result.steps, result.tasks
    n = len(st)
    assert n == sum(len(t.steps) for t in program.tasks)
    # every step ran, with a non-negative duration, inside the run
    for s in range(n):
        assert 0 <= st.start[s] <= st.end[s] <= result.total_cycles, s
    assert result.total_cycles == max(st.end, default=0)
    # rows follow the program: task by task, step by step, same kind and bytes
    s = 0
    for t in program.tasks:
        assert tk.first_step[t.id] == s
        for i, step in enumerate(t.steps):
            assert (st.task[s], st.index[s], STEP_KINDS[st.kind[s]], st.bytes[s]) == \
                (t.id, i, step.kind, step.bytes)
            s += 1
    # one step at a time per engine, in program order
    per_engine: dict[int, list[int]] = {}
    for s in range(n):
        per_engine.setdefault(st.engine[s], []).append(s)
    for e, steps in per_engine.items():
        for a, b in zip(steps, steps[1:]):
            assert st.end[a] <= st.start[b], (result.engines[e], a, b)
        assert result.engine_busy[e] == sum(st.end[s] - st.start[s] for s in steps)
    for e in range(len(result.engines)):
        if e not in per_engine:
            assert result.engine_busy[e] == 0
    # dependencies end before their dependents start; a task's steps in kind groups
    for t in program.tasks:
        steps = list(result.task_steps(t.id))
        if not steps:
            continue
        begin = min(st.start[s] for s in steps)
        assert tk.start[t.id] == begin and tk.end[t.id] == max(st.end[s] for s in steps)
        for d in t.deps:
            assert tk.end[d] <= begin, (d, t.id)
        for a, b in zip(steps, steps[1:]):
            if st.kind[a] != st.kind[b]:
                earlier = [x for x in steps if x <= a]
                assert max(st.end[x] for x in earlier) <= st.start[b], (t.id, a, b)
    check_sram(program, result)


def check_sram(program, result):
    st = result.steps
    allocs = {a.buffer: a for a in result.allocations}
    bufs = {b.id: b for b in program.buffers}
    for s, (task, index) in enumerate(zip(st.task, st.index)):
        step = program.tasks[task].steps[index]
        for b in (*step.srcs, *step.dsts):
            if bufs[b].placement == "sram":
                a = allocs[b]
                assert a.alloc <= st.start[s] and st.end[s] <= a.free, (b, s)
                assert (a.offset, a.size) == (bufs[b].offset, bufs[b].size)
    items = sorted(allocs.values(), key=lambda a: a.offset)
    for i, x in enumerate(items):
        assert x.offset + x.size <= result.sram_capacity
        for y in items[i + 1:]:
            if y.offset >= x.offset + x.size:
                break
            assert x.free <= y.alloc or y.free <= x.alloc, (x, y)  # same addresses, not at once
    # occupancy recomputed from the allocations, at every change
    times = sorted({a.alloc for a in items} | {a.free for a in items})
    peak = 0
    for t in times:
        used = sum(a.size for a in items if a.alloc <= t < a.free)
        peak = max(peak, used)
    assert peak == result.sram_peak <= result.sram_capacity
    for t, used in zip(result.sram_times, result.sram_bytes):
        assert used == sum(a.size for a in items if a.alloc <= t < a.free)
