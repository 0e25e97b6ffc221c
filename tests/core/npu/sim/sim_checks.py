"""Invariants every simulated schedule must satisfy, checked from the
program and the result alone (shared by the simulator tests)."""

from __future__ import annotations

import jsonschema
import pytest

from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.sim.results import STEP_KINDS
from npu_studio.core.npu.sim.trace import trace_events

# The Trace Event Format (Google's "Trace Event Format" document) for the phases we write.
TRACE_SCHEMA = {
    "type": "object", "required": ["traceEvents"],
    "properties": {"traceEvents": {"type": "array", "items": {
        "type": "object", "required": ["ph", "pid", "name"],
        "properties": {"ph": {"enum": ["X", "C", "M", "s", "f"]}, "pid": {"type": "integer"},
                       "tid": {"type": "integer"}, "name": {"type": "string"},
                       "ts": {"type": "number", "minimum": 0}, "args": {"type": "object"}},
        "allOf": [
            {"if": {"properties": {"ph": {"const": "X"}}},
             "then": {"required": ["ts", "dur", "tid"], "properties": {"dur": {"type": "number", "minimum": 0}}}},
            {"if": {"properties": {"ph": {"const": "C"}}},
             "then": {"required": ["ts", "args"],
                      "properties": {"args": {"additionalProperties": {"type": "number"}}}}},
            {"if": {"properties": {"ph": {"enum": ["s", "f"]}}},
             "then": {"required": ["ts", "id", "tid", "cat"]}},
            {"if": {"properties": {"ph": {"const": "M"}}},
             "then": {"properties": {"name": {"enum": ["process_name", "thread_name", "thread_sort_index"]}}}},
        ]}}},
}


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


def check_trace(events, result):
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names.values()) == sorted(result.engines)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    slices: dict[int, list] = {}
    for e in events:
        if e["ph"] == "X":
            slices.setdefault(e["tid"], []).append(e)
            assert e["args"]["end_cycle"] - e["args"]["start_cycle"] == pytest.approx(
                e["dur"] * result.clock_mhz)
    assert sum(len(v) for v in slices.values()) == len(result.steps)
    for tid, xs in slices.items():
        assert tid in names
        xs.sort(key=lambda e: e["ts"])
        for a, b in zip(xs, xs[1:]):
            assert a["args"]["end_cycle"] <= b["args"]["start_cycle"]
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert counters == {"SRAM"}
    assert max(e["args"]["bytes"] for e in events if e["ph"] == "C") == result.sram_peak
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    assert all(starts[i]["ts"] <= ends[i]["ts"] for i in starts)


def check_simulation(program, validate_schema: bool = True):
    """Simulate `program` and check the result and its Perfetto trace; the
    result. (jsonschema takes ~10 s on a 100k-task trace: `validate_schema`
    lets the big programs check the trace's invariants only.)"""
    result = simulate(program)
    check_schedule(program, result)
    assert result.total_cycles > 0 and len(result.dispatches) == len(program.dispatches)
    fallback = {d.index for d in program.dispatches if not d.legal}
    assert {d.index for d in result.dispatches if d.bound == "cpu"} == fallback
    events = trace_events(program, result)
    if validate_schema:
        jsonschema.validate({"traceEvents": events}, TRACE_SCHEMA)
    check_trace(events, result)
    # a flow arrow per dependency: some exactly when some task has dependencies
    assert any(e["ph"] == "s" for e in events) == any(t.deps for t in program.tasks)
    return result
