"""Timing simulation of an NPU program: `simulate(program, target) -> SimResult`.

cost.py      cycles of one step (SCALE-Sim's systolic model, vector, CPU, DMA)
plan.py      the program flattened for the simulation
timing.py    the event-driven engine simulation
stats.py     utilization, overlap, per-dispatch numbers, critical path
results.py   the result and its versioned JSON (docs/npu-sim-result.schema.json)
"""

from __future__ import annotations

import gc

from ..program.npu_ir import NpuProgram
from ..target.target import NpuTarget
from .results import SimResult
from .plan import SimError


def simulate(program: NpuProgram, target: NpuTarget | None = None) -> SimResult:
    """Simulate `program` on `target` (default: the target it was planned for).

    Raises SimError when the target's SRAM cannot hold the plan or the
    task dependencies have a cycle.
    """
    from .stats import build_result
    from .plan import build_plan
    from .timing import run

    target = target or program.target
    collecting = gc.isenabled()
    gc.disable()  # millions of small lists and tuples, no cycles: the collector only slows it
    try:
        plan = build_plan(program, target)
        return build_result(program, target, plan, run(plan, target))
    finally:
        if collecting:
            gc.enable()


__all__ = ["SimError", "SimResult", "simulate"]
