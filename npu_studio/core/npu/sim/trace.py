"""The simulated schedule as Chrome trace-event JSON (opens in Perfetto).

One process (the NPU), one thread per engine (each DMA channel, the MAC
array, the vector unit, the CPU). Every step is a complete ("X") slice
on its engine's thread; an engine runs one step at a time, so slices on
a thread never overlap. A counter ("C") track "SRAM" holds the bytes in
use; flow events ("s" -> "f") draw each task dependency from the end of
the producer task to the start of the dependent one; metadata ("M")
names the process and the threads. Timestamps are microseconds at the
target clock (the format's unit); args keep the exact cycles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...textio import write_output
from ..program.npu_ir import NpuProgram
from .results import STEP_KINDS, SimResult

PID = 1


def trace_events(program: NpuProgram, result: SimResult) -> list[dict[str, Any]]:
    us = 1.0 / result.clock_mhz
    ev: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "tid": 0, "name": "process_name",
         "args": {"name": f"NPU {result.target}"}},
    ]
    for i, name in enumerate(result.engines):
        ev.append({"ph": "M", "pid": PID, "tid": i + 1, "name": "thread_name", "args": {"name": name}})
        ev.append({"ph": "M", "pid": PID, "tid": i + 1, "name": "thread_sort_index",
                   "args": {"sort_index": i}})
    tasks = program.tasks
    st = result.steps
    for task, index, kind, engine, start, end, nbytes, ops in st.rows():
        t = tasks[task]
        step = t.steps[index]
        args: dict[str, Any] = {
            "task": task, "dispatch": t.dispatch, "step": STEP_KINDS[kind],
            "tile_offsets": list(t.tile_offsets), "tile_sizes": list(t.tile_sizes),
            "start_cycle": start, "end_cycle": end,
        }
        if nbytes:
            args["bytes"] = nbytes
        if ops:
            args["ops"] = ops
        args["buffers"] = f"{','.join(step.srcs)} -> {','.join(step.dsts)}"
        ev.append({"ph": "X", "pid": PID, "tid": engine + 1, "cat": STEP_KINDS[kind],
                   "name": f"{t.op} #{t.dispatch} t{task} {STEP_KINDS[kind]}",
                   "ts": start * us, "dur": (end - start) * us, "args": args})
    # one SRAM track even when nothing runs in SRAM (every dispatch on the CPU)
    for time, used in zip(result.sram_times, result.sram_bytes) if result.sram_times else [(0, 0)]:
        ev.append({"ph": "C", "pid": PID, "tid": 0, "name": "SRAM", "ts": time * us,
                   "args": {"bytes": used}})
    # Flows bind to the enclosing slices: the producer's last step, the dependent's first.
    flow = 0
    first = result.tasks.first_step
    n_steps = len(st)
    for t in tasks:
        if not t.deps:
            continue
        f_step = first[t.id]
        if f_step >= n_steps or (t.id + 1 < len(first) and first[t.id + 1] == f_step):
            continue
        for d in t.deps:
            last = (first[d + 1] if d + 1 < len(first) else n_steps) - 1
            if last < first[d]:
                continue
            flow += 1
            ev.append({"ph": "s", "pid": PID, "tid": st.engine[last] + 1, "cat": "dependency",
                       "name": "dependency", "id": flow, "ts": st.start[last] * us})
            ev.append({"ph": "f", "bp": "e", "pid": PID, "tid": st.engine[f_step] + 1,
                       "cat": "dependency", "name": "dependency", "id": flow,
                       "ts": st.start[f_step] * us})
    return ev


def write_trace(program: NpuProgram, result: SimResult, path: str | Path) -> None:
    data = {"traceEvents": trace_events(program, result), "displayTimeUnit": "ns",
            "otherData": {"target": result.target, "clock_mhz": result.clock_mhz,
                          "total_cycles": result.total_cycles}}
    write_output(path, json.dumps(data, separators=(",", ":")))
