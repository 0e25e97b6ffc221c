"""One design point: the NPU pipeline and the timing simulation on compiled dispatches.

Runs in the sweep's workers (and in-process with one worker). Memoised
per process by what each stage depends on (docs/sweep.md, "Memoisation"):

- the plan by the target without its clock, CPU-fallback costs, energy and
  area; a model's planner (npu/replan.py) keeps its parse and legality and
  the programs of tiles it has seen, the tile search (npu/tile_search.py)
  its candidates, bounds and simulated cycles by the fields each reads;
- the simulation by the target without its clock, energy and area: a
  point that differs only in those is recomputed from the last
  simulation (time, leakage, energy, area).

A point's row is a dict of plain values (units in the names); the same
model and target give the same row, bit for bit, in any process.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any

from ..errors import StudioError
from ..npu.backend.api import BackendError
from ..npu.target.cost_model import CostModel
from ..npu.program.npu_ir import NpuProgram
from ..npu.plan.replan import ModelPlanner
from ..npu.sim import SimResult, simulate
from ..npu.sim.energy import area, energy
from ..npu.target.target import NpuTarget
from ..npu.plan.tile_search import clear_memo as clear_tile_memo

# Every metric of a row, in table order, with its type; docs/sweep.md explains each.
METRICS: tuple[tuple[str, type], ...] = (
    ("cycles", int), ("time_us", float),
    ("energy_pj", float), ("dram_pj", float), ("sram_pj", float), ("mac_pj", float),
    ("vector_pj", float), ("leakage_pj", float), ("edp_pj_us", float),
    ("area_mm2", float), ("sram_area_mm2", float), ("mac_area_mm2", float),
    ("sram_kib", int), ("dram_read_bytes", int), ("dram_written_bytes", int), ("dram_bytes", int),
    ("sram_peak_bytes", int), ("npu_dispatches", int), ("cpu_dispatches", int),
)
METRIC_NAMES = tuple(n for n, _ in METRICS)
AREA_METRICS = ("area_mm2", "sram_area_mm2", "mac_area_mm2", "sram_kib")  # known without a run
_MEMO_SIZE = 4  # programs and simulations of large models are big: a few of each

_lock = threading.Lock()  # a Dask worker may run batches on several threads
_plans: OrderedDict[tuple, NpuProgram] = OrderedDict()
_sims: OrderedDict[tuple, SimResult] = OrderedDict()
_planners: OrderedDict[str, ModelPlanner] = OrderedDict()  # each model parsed and legalized
stats = {"plans": 0, "simulations": 0, "points": 0}  # what this process computed (tests, benchmarks)


def plan_key(target: NpuTarget) -> NpuTarget:
    """The target as far as the pipeline reads it."""
    return dataclasses.replace(target, name="", clock_mhz=1, cpu_launch_cycles=0, cpu_ops_per_cycle=1,
                               cost=CostModel(), source="")


def sim_key(target: NpuTarget) -> NpuTarget:
    """The target as far as the timing simulation reads it."""
    return dataclasses.replace(target, name="", clock_mhz=1, cost=CostModel(), source="")


def _memo(cache: OrderedDict, key, make):
    with _lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = make()
    with _lock:
        cache[key] = value
        if len(cache) > _MEMO_SIZE:
            cache.popitem(last=False)
    return value


def clear_memo() -> None:
    _plans.clear()
    _sims.clear()
    _planners.clear()
    clear_tile_memo()


def area_metrics(target: NpuTarget) -> dict[str, Any]:
    a = area(target)
    return {"area_mm2": a.total_mm2, "sram_area_mm2": a.sram_mm2, "mac_area_mm2": a.mac_mm2,
            "sram_kib": target.sram_bytes // 1024}


def evaluate(model_hash: str, flow_text: str, target: NpuTarget,
             plan_target: NpuTarget | None = None) -> dict[str, Any]:
    """The metrics of one point, with `status` ("ok" | "infeasible") and `reason`; the program is
    planned for `plan_target` (default `target`) and simulated on `target`."""
    plan_target = plan_target or target
    stats["points"] += 1
    row: dict[str, Any] = {n: None for n in METRIC_NAMES}
    row.update(area_metrics(target))
    try:
        def plan():
            stats["plans"] += 1
            planner = _memo(_planners, model_hash, lambda: ModelPlanner(flow_text))
            return planner.program(dataclasses.replace(plan_target, source=""))
        program = _memo(_plans, (model_hash, plan_key(plan_target)), plan)
        unfit = [d for d in program.dispatches if d.rule == "sram-fit"]
        if unfit:
            return {**row, "status": "infeasible",
                    "reason": f"dispatch #{unfit[0].index}: {unfit[0].reason}"}

        def sim():
            stats["simulations"] += 1
            return simulate(program, target)
        result = _memo(_sims, (model_hash, sim_key(target)), sim)
    except BackendError:  # not the point's fault: the sweep stops with the backend's one line
        raise
    except StudioError as e:  # NpuError, SimError: the point cannot run, the sweep goes on
        return {**row, "status": "infeasible", "reason": str(e)}
    e = energy(program, result, target)
    time_us = result.total_cycles / target.clock_mhz
    row.update({
        "cycles": result.total_cycles, "time_us": time_us,
        "energy_pj": e.total_pj, "dram_pj": e.dram_pj, "sram_pj": e.sram_pj, "mac_pj": e.mac_pj,
        "vector_pj": e.vector_pj, "leakage_pj": e.leakage_pj, "edp_pj_us": e.total_pj * time_us,
        "dram_read_bytes": e.dram_read_bytes, "dram_written_bytes": e.dram_written_bytes,
        "dram_bytes": e.dram_read_bytes + e.dram_written_bytes, "sram_peak_bytes": result.sram_peak,
        "npu_dispatches": sum(1 for d in program.dispatches if d.legal),
        "cpu_dispatches": sum(1 for d in program.dispatches if not d.legal),
    })
    return {**row, "status": "ok", "reason": ""}


def evaluate_batch(model_hash: str, flow_text: str,
                   batch: list[tuple[str, NpuTarget, NpuTarget]]) -> list[tuple[str, dict[str, Any]]]:
    """(cache key, row) for each (cache key, target, plan target) of one model."""
    return [(key, evaluate(model_hash, flow_text, t, p)) for key, t, p in batch]

