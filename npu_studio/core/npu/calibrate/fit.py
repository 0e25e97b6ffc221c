"""Target keys fitted to measured cycles: a bounded least-squares fit through the timing simulator.

The residuals are the relative errors (simulated - measured) / measured of every measured
dispatch or task, the planned program simulated on the target with the keys' values. Target keys
are integers and the simulator counts whole cycles, so the residuals are a step function of the
keys: scipy's trust-region fit (`least_squares`, method "trf", bounded by each key's accepted
range) gets a Jacobian of differences over whole steps (about 5% of each value, at least 1),
then a search over whole values around its answer takes every step of one key that lowers the
cost, until none does. Each distinct set of values is simulated once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...errors import StudioError
from ...lazy_import import lazy_module
from ..program.npu_ir import NpuProgram
from ..sim import simulate
from ..sim.cost import MAC_KINDS
from ..target.target import DTYPES, INT_RANGES, MAX_MACS_PER_CYCLE, NpuTarget
from .measured import Measured, simulated_cycles

np = lazy_module("numpy")

# Fittable key -> the NpuTarget field it sets (mac_array.macs_per_cycle.<type> sets one rate)
FIELDS = {"dram.bytes_per_cycle": "dram_bytes_per_cycle", "dma.setup_cycles": "dma_setup_cycles",
          "cpu.launch_cycles": "cpu_launch_cycles", "cpu.ops_per_cycle": "cpu_ops_per_cycle",
          "vector.lanes": "vector_lanes"}
RATE_PREFIX = "mac_array.macs_per_cycle."
MAX_EVALUATIONS = 400  # simulations of one fit, at most
ROUNDS = 4  # trust-region fits, each from the last one's polished answer


class CalibrationError(StudioError):
    """Keys that cannot be fitted (unknown, or not exercised by the measurements)."""


def key_names() -> list[str]:
    return [*FIELDS, *(RATE_PREFIX + t for t in DTYPES)]


def bounds(key: str) -> tuple[int, int]:
    return (1, MAX_MACS_PER_CYCLE) if key.startswith(RATE_PREFIX) else INT_RANGES[key]


def value(target: NpuTarget, key: str) -> int:
    if key.startswith(RATE_PREFIX):
        return target.mac_rate(key[len(RATE_PREFIX):])
    return getattr(target, FIELDS[key])


def with_values(target: NpuTarget, values: dict[str, int]) -> NpuTarget:
    changes = {FIELDS[k]: v for k, v in values.items() if k in FIELDS}
    rates = dict(target.macs_per_cycle)
    rates.update({k[len(RATE_PREFIX):]: v for k, v in values.items() if k.startswith(RATE_PREFIX)})
    return dataclasses.replace(target, macs_per_cycle=tuple(sorted(rates.items())), **changes)


def default_keys(program: NpuProgram) -> list[str]:
    """The keys the program's steps exercise: bandwidth and DMA setup, each MAC input type's rate,
    the vector lanes, the CPU launch."""
    kinds = {s.kind for t in program.tasks for s in t.steps}
    keys = ["dram.bytes_per_cycle", "dma.setup_cycles"] if kinds & {"dma_in", "dma_out", "dma_copy"} else []
    mac_types = sorted({d.dtype for d in program.dispatches if d.legal and d.kind in MAC_KINDS and d.dtype})
    keys += [RATE_PREFIX + t for t in mac_types if t in DTYPES]
    if any(d.legal and d.unit == "vector" for d in program.dispatches):
        keys.append("vector.lanes")
    if "cpu" in kinds:
        keys.append("cpu.launch_cycles")
    return keys


def check_keys(keys: list[str]) -> None:
    known = key_names()
    for k in keys:
        if k not in known:
            raise CalibrationError(None, f"--keys: {k!r} cannot be fitted; fittable keys: "
                                         f"{', '.join(FIELDS)}, {RATE_PREFIX}<type>")
    if len(set(keys)) != len(keys) or not keys:
        raise CalibrationError(None, "--keys: give each key once, at least one")


PROBE = 0.25  # how far each key is moved (of its value) to see which measurements it changes


def check_determined(program: NpuProgram, target: NpuTarget, measured: Measured, keys: list[str]) -> None:
    """CalibrationError naming the key when the measurements cannot determine the keys: more keys
    than measurements, a key no measured dispatch or task changes with, or one whose effect is a
    combination of the others' (moved one at a time by PROBE of its value, through the simulator)."""
    one = measured.level  # "dispatch" or "task"
    what = "dispatches" if one == "dispatch" else "tasks"
    n = len(measured.cycles)
    if len(keys) > n:
        hint = "give fewer keys with --keys" + (", or per-task measurements" if one == "dispatch" else "")
        raise CalibrationError(measured.path, f"--keys: {len(keys)} keys ({', '.join(keys)}) but {n} measured "
                                              f"{one if n == 1 else what}: at most {n} "
                                              f"{'key' if n == 1 else 'keys'} can be fitted to them ({hint})")
    ids = sorted(measured.cycles)
    scale = np.array([max(measured.cycles[i], 1.0) for i in ids])

    def cycles(values: dict[str, int]) -> np.ndarray:
        sim = simulated_cycles(simulate(program, with_values(target, values)), measured.level)
        return np.array([sim[i] for i in ids], dtype=float)

    base = cycles({})
    kept: list[tuple[str, np.ndarray]] = []
    for key in keys:
        v, (lo, hi) = value(target, key), bounds(key)
        step = max(1, round(PROBE * v))
        moved = v + step if v + step <= hi else max(lo, v - step)
        column = (cycles({key: moved}) - base) / scale if moved != v else np.zeros(len(ids))
        if not np.any(column):
            raise CalibrationError(measured.path, f"--keys: {key}: the measurements do not constrain it (no "
                                                  f"measured {one}'s simulated cycles change with it)")
        unit = column / np.linalg.norm(column)
        if kept:
            stacked = np.stack([c for _, c in kept] + [unit], axis=1)
            singular = np.linalg.svd(stacked, compute_uv=False)
            if singular[-1] < 1e-3 * singular[0]:
                others = ", ".join(k for k, _ in kept)
                raise CalibrationError(measured.path, f"--keys: {key}: the measurements cannot tell it apart from "
                                                      f"{others} (it changes the measured {what} only as they do)")
        kept.append((key, unit))


@dataclass(frozen=True)
class Fit:
    keys: tuple[str, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]
    target: NpuTarget  # the target with the fitted values
    errors_before: dict[int, float]  # per measured id: relative error
    errors_after: dict[int, float]
    simulations: int


def fit(program: NpuProgram, target: NpuTarget, measured: Measured, keys: list[str]) -> Fit:
    from scipy.optimize import least_squares

    check_keys(keys)
    ids = sorted(measured.cycles)
    wanted = np.array([measured.cycles[i] for i in ids], dtype=float)
    lo = np.array([bounds(k)[0] for k in keys], dtype=float)
    hi = np.array([bounds(k)[1] for k in keys], dtype=float)
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def whole(x) -> tuple[int, ...]:
        return tuple(int(v) for v in np.clip(np.rint(x), lo, hi))

    def residuals(values: tuple[int, ...]) -> np.ndarray:
        if values not in cache:
            if len(cache) >= MAX_EVALUATIONS:
                raise _Budget()
            result = simulate(program, with_values(target, dict(zip(keys, values))))
            sim = simulated_cycles(result, measured.level)
            cache[values] = np.array([sim[i] for i in ids], dtype=float)
        return (cache[values] - wanted) / np.maximum(wanted, 1.0)

    def jacobian(x) -> np.ndarray:
        v = whole(x)
        r0 = residuals(v)
        cols = []
        for i, vi in enumerate(v):
            step = max(1, round(0.05 * vi))
            if vi + step > hi[i]:
                step = -step
            moved = list(v)
            moved[i] = int(np.clip(vi + step, lo[i], hi[i]))
            delta = moved[i] - vi
            cols.append((residuals(tuple(moved)) - r0) / delta if delta else np.zeros_like(r0))
        return np.stack(cols, axis=1)

    start = tuple(value(target, k) for k in keys)
    best = start
    try:
        for _ in range(ROUNDS):  # a valley across two keys: one-key steps stop in it, a new trust region does not
            result = least_squares(lambda x: residuals(whole(x)), np.array(best, dtype=float), jac=jacobian,
                                   bounds=(lo, hi), method="trf", x_scale=np.maximum(np.array(start, float), 1.0),
                                   max_nfev=60)
            polished = _polish(whole(result.x), residuals, lo, hi)
            if polished == best:
                break
            best = polished
    except _Budget:
        best = min(cache, key=lambda v: float(np.sum(residuals(v) ** 2)))
    if np.sum(residuals(best) ** 2) > np.sum(residuals(start) ** 2):
        best = start
    fitted = with_values(target, dict(zip(keys, best)))
    return Fit(tuple(keys), start, best, fitted, dict(zip(ids, residuals(start).tolist())),
               dict(zip(ids, residuals(best).tolist())), len(cache))


class _Budget(Exception):
    """The fit reached MAX_EVALUATIONS simulations: the best values so far stand."""


def _polish(values: tuple[int, ...], residuals, lo, hi) -> tuple[int, ...]:
    """Whole-value steps of one key at a time (5% of it, then single steps) while the cost falls."""
    def cost(v):
        return float(np.sum(residuals(v) ** 2))

    best, best_cost = values, cost(values)
    improved = True
    while improved:
        improved = False
        for i in range(len(best)):
            for step in sorted({max(1, round(0.05 * best[i])), 1}, reverse=True):
                for sign in (1, -1):
                    trial = list(best)
                    trial[i] = int(np.clip(best[i] + sign * step, lo[i], hi[i]))
                    trial = tuple(trial)
                    if trial != best and (c := cost(trial)) < best_cost:
                        best, best_cost, improved = trial, c, True
    return best
