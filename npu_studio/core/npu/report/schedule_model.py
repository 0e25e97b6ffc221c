"""What the schedule view draws, as plain arrays (no Qt).

`ScheduleModel` flattens a simulation result and its NPU program into the
arrays the chart needs (one bar per step, SRAM occupancy as a step
function, one rectangle per SRAM allocation), the text shown on hover,
and the queries behind the links (tasks of a dispatch, dependencies and
dependents, spans). `compare` puts two runs side by side for the
summary's before -> after column. Built once per run, in the worker that
simulated, so the GUI thread only draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...lazy_import import lazy_module

from ..program.npu_ir import NpuProgram
from ..sim.results import STEP_KINDS

np = lazy_module("numpy")  # loaded on first use: not at the app's start


@dataclass(frozen=True)
class SummaryRow:
    dispatch: int
    kind: str
    onnx: str
    cycles: int
    share: float  # of the total cycles, 0..1
    mac_utilization: float  # 0..1 while the dispatch runs; 0 for fallbacks
    dram_bytes: int  # read + written
    sram_peak: int
    bound: str  # compute | memory | cpu


@dataclass(frozen=True)
class Totals:
    cycles: int
    clock_mhz: float
    utilization: dict[str, float]  # engine -> busy share of the total
    overlap: dict[str, int]  # dma_only, compute_only, both, idle -> cycles

    @property
    def microseconds(self) -> float:
        return self.cycles / self.clock_mhz


@dataclass(frozen=True)
class MeasuredBars:
    """Measured cycles as bars: one per step of a measured task (dispatch)."""

    level: str  # "task" or "dispatch": what `id` names
    engine: np.ndarray
    start: np.ndarray  # the step's simulated start, in cycles
    end: np.ndarray  # start + the step's cycles x measured / simulated of its task (dispatch)
    id: np.ndarray
    dispatch: np.ndarray
    cycles: np.ndarray  # measured
    simulated: np.ndarray  # the simulated cycles of the same task (dispatch)


@dataclass(frozen=True)
class Comparison:
    before: int
    after: int
    per_dispatch: dict[int, tuple[int, int]]  # dispatch -> (cycles before, after)

    @property
    def delta(self) -> int:
        return self.after - self.before

    def headline(self) -> str:
        if not self.before:
            return f"total cycles {self.before:,} -> {self.after:,}"
        pct = 100.0 * self.delta / self.before
        return f"total cycles {self.before:,} -> {self.after:,} ({pct:+.1f}%)"


@dataclass
class ScheduleModel:
    engines: list[str]
    # one entry per bar (a step of a task on an engine)
    bar_task: np.ndarray
    bar_engine: np.ndarray
    bar_start: np.ndarray
    bar_end: np.ndarray
    bar_kind: list[str]
    bar_bytes: np.ndarray
    # per task id
    task_start: np.ndarray
    task_end: np.ndarray
    task_dispatch: np.ndarray
    # SRAM: occupancy as a step function and the allocations behind it
    sram_times: np.ndarray
    sram_bytes: np.ndarray
    sram_capacity: int
    alloc_buffer: list[str]
    alloc_addr: np.ndarray
    alloc_size: np.ndarray
    alloc_start: np.ndarray
    alloc_end: np.ndarray
    alloc_dispatch: np.ndarray
    critical_path: list[int]
    totals: Totals
    rows: list[SummaryRow]
    program: NpuProgram = field(repr=False)
    stale: bool = False
    measured: "MeasuredBars | None" = None  # measured beside simulated (`with_measured`)

    @classmethod
    def from_result(cls, program: NpuProgram, result) -> "ScheduleModel":
        """The arrays of a `sim.SimResult` of `program`."""
        steps, tasks = result.steps, result.tasks
        kinds = STEP_KINDS
        owner = _buffer_dispatch(program)
        allocs = result.allocations
        total = result.total_cycles
        infos = {d.index: d for d in program.dispatches}
        rows = [
            SummaryRow(
                d.index, infos[d.index].kind if d.index in infos else "?",
                onnx_label(infos[d.index].location) if d.index in infos else "-",
                d.cycles, d.cycles / total if total else 0.0, d.mac_utilization,
                d.dram_read + d.dram_written, d.sram_peak, d.bound)
            for d in result.dispatches
        ]
        return cls(
            engines=list(result.engines),
            bar_task=np.asarray(steps.task, dtype=np.int64),
            bar_engine=np.asarray(steps.engine, dtype=np.int64),
            bar_start=np.asarray(steps.start, dtype=float),
            bar_end=np.asarray(steps.end, dtype=float),
            bar_kind=[kinds[k] for k in steps.kind],
            bar_bytes=np.asarray(steps.bytes, dtype=np.int64),
            task_start=np.asarray(tasks.start, dtype=float),
            task_end=np.asarray(tasks.end, dtype=float),
            task_dispatch=np.asarray(tasks.dispatch, dtype=np.int64),
            sram_times=np.asarray(result.sram_times, dtype=float),
            sram_bytes=np.asarray(result.sram_bytes, dtype=float),
            sram_capacity=result.sram_capacity,
            alloc_buffer=[a.buffer for a in allocs],
            alloc_addr=np.asarray([a.offset for a in allocs], dtype=float),
            alloc_size=np.asarray([a.size for a in allocs], dtype=float),
            alloc_start=np.asarray([a.alloc for a in allocs], dtype=float),
            alloc_end=np.asarray([a.free for a in allocs], dtype=float),
            alloc_dispatch=np.asarray([owner.get(a.buffer, 0) for a in allocs], dtype=np.int64),
            critical_path=list(result.critical_path),
            totals=Totals(total, float(result.clock_mhz),
                          {n: result.utilization(n) for n in result.engines},
                          {"dma_only": result.overlap.dma_only, "compute_only": result.overlap.compute_only,
                           "both": result.overlap.both, "idle": result.overlap.idle}),
            rows=rows, program=program,
        )

    # -- measured beside simulated --------------------------------------------
    def with_measured(self, level: str, cycles: dict[int, float]) -> None:
        """Measured cycles per task or per dispatch (`level`) on a "measured" row under each engine the
        task (dispatch) uses. A measurement is of the whole task, not of each engine, so each of its
        steps is drawn where the simulation has it, stretched by measured / simulated: a bar longer
        than the one above it is slower on the chip by that much."""
        if level == "task":
            owner, n_owners = self.bar_task, len(self.task_start)
            simulated = self.task_end - self.task_start
        else:
            owner, n_owners = self.bar_dispatch, max(int(self.task_dispatch.max(initial=-1)) + 1, 1)
            simulated = np.zeros(n_owners)
            for r in self.rows:
                if 0 <= r.dispatch < n_owners:
                    simulated[r.dispatch] = r.cycles
        got = np.full(n_owners, np.nan)
        for k, v in cycles.items():
            if 0 <= k < n_owners:
                got[k] = v
        sel = np.flatnonzero(~np.isnan(got[owner]))
        who = owner[sel]
        ratio = got[who] / np.maximum(simulated[who], 1.0)
        start = self.bar_start[sel]
        self.measured = MeasuredBars(level, self.bar_engine[sel], start, start + (self.bar_end[sel] - start) * ratio,
                                     who, self.task_dispatch[who] if level == "task" else who, got[who],
                                     simulated[who].astype(float))

    def display_rows(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(row labels, the row of each engine's simulated bars, the row of its measured ones or -1):
        an engine's measured row right under its own, for the engines with measured bars."""
        measured_engines = set(np.unique(self.measured.engine).tolist()) if self.measured is not None else set()
        labels: list[str] = []
        sim_row = np.zeros(len(self.engines), dtype=np.int64)
        meas_row = np.full(len(self.engines), -1, dtype=np.int64)
        for e, name in enumerate(self.engines):
            sim_row[e] = len(labels)
            labels.append(name)
            if e in measured_engines:
                meas_row[e] = len(labels)
                labels.append(f"{name} measured")
        return labels, sim_row, meas_row

    def measured_text(self, i: int, unit: str = "cycles") -> str:
        """Hover text of measured bar `i`: what it is, both cycle counts and their difference."""
        m = self.measured
        what = (f"task #{int(m.id[i])} of dispatch #{int(m.dispatch[i])}" if m.level == "task"
                else f"dispatch #{int(m.id[i])}")
        got, sim = float(m.cycles[i]), float(m.simulated[i])
        error = f" ({100 * (sim - got) / got:+.1f}% simulated against measured)" if got else ""
        cycles = " cycles" if unit != "us" else ""
        return (f"measured {what} (its step on {self.engines[int(m.engine[i])]}, drawn at measured / simulated)\n"
                f"measured: {self._fmt(got, unit)}{cycles}\n"
                f"simulated: {self._fmt(sim, unit)}{cycles}{error}")

    def measured_of_task(self, task: int) -> tuple[float, float] | None:
        """(measured, simulated) cycles of `task` when it was measured per task."""
        m = self.measured
        if m is None or m.level != "task":
            return None
        hit = np.flatnonzero(m.id == task)
        return (float(m.cycles[hit[0]]), float(m.simulated[hit[0]])) if len(hit) else None

    # -- queries ----------------------------------------------------------
    @property
    def bar_dispatch(self) -> np.ndarray:
        return self.task_dispatch[self.bar_task]

    def dispatches(self) -> list[int]:
        return sorted({int(d) for d in np.unique(self.task_dispatch)})

    def tasks_of_dispatch(self, dispatch: int) -> list[int]:
        return np.flatnonzero(self.task_dispatch == dispatch).tolist()

    def span(self, tasks: list[int]) -> tuple[float, float]:
        if not tasks:
            return 0.0, float(self.totals.cycles)
        idx = np.asarray(tasks, dtype=int)
        return float(self.task_start[idx].min()), float(self.task_end[idx].max())

    def deps_of(self, task: int) -> tuple[int, ...]:
        return tuple(self.program.tasks[task].deps)

    def dependents_of(self, task: int) -> tuple[int, ...]:
        return tuple(self._dependents().get(task, ()))

    def _dependents(self) -> dict[int, list[int]]:
        cache = getattr(self, "_dependents_cache", None)
        if cache is None:
            cache = {}
            for t in self.program.tasks:
                for d in t.deps:
                    cache.setdefault(d, []).append(t.id)
            self._dependents_cache = cache
        return cache

    def row(self, dispatch: int) -> SummaryRow | None:
        return next((r for r in self.rows if r.dispatch == dispatch), None)

    def to_unit(self, cycles: float, unit: str) -> float:
        return cycles / self.totals.clock_mhz if unit == "us" else cycles

    # -- text -------------------------------------------------------------
    def task_text(self, task: int, unit: str = "cycles") -> str:
        """Hover text: task, dispatch, ONNX node, tile, bytes, cycles, span."""
        t = self.program.tasks[task]
        info = self.program.dispatches[t.dispatch] if t.dispatch < len(self.program.dispatches) else None
        lines = [f"task #{t.id} {t.op}" + (" (CPU fallback)" if t.fallback else "")]
        if info is not None:
            lines.append(f"dispatch #{t.dispatch} {info.kind}  ONNX: {onnx_label(info.location)}")
            if t.tile_sizes:
                names = info.loop_dims or tuple(f"d{i}" for i in range(len(t.tile_sizes)))
                at = " ".join(f"{n}{o}" for n, o in zip(names, t.tile_offsets))
                size = " ".join(f"{n}{s}" for n, s in zip(names, t.tile_sizes))
                lines.append(f"tile at {at}, size {size}")
        sel = np.flatnonzero(self.bar_task == task)
        moved = int(self.bar_bytes[sel].sum()) if len(sel) else 0
        lines.append(f"bytes moved: {moved:,}")
        s, e = float(self.task_start[task]), float(self.task_end[task])
        lines.append(f"cycles: {int(e - s):,}  start {self._fmt(s, unit)}  end {self._fmt(e, unit)}")
        measured = self.measured_of_task(task)
        if measured is not None:
            lines.append(f"measured: {int(measured[0]):,} cycles (simulated {int(measured[1]):,})")
        for i in sel.tolist():
            eng = self.engines[int(self.bar_engine[i])]
            lines.append(f"  {self.bar_kind[i]} on {eng}: {int(self.bar_start[i]):,}-{int(self.bar_end[i]):,}")
        return "\n".join(lines)

    def _fmt(self, cycles: float, unit: str) -> str:
        return f"{self.to_unit(cycles, 'us'):.3f} us" if unit == "us" else f"{int(cycles):,}"

    # -- comparison -------------------------------------------------------
    def compare(self, before: "ScheduleModel") -> Comparison:
        """This run against an earlier one (`before`)."""
        old = {r.dispatch: r.cycles for r in before.rows}
        new = {r.dispatch: r.cycles for r in self.rows}
        per = {d: (old.get(d, 0), new.get(d, 0)) for d in sorted(set(old) | set(new))}
        return Comparison(before.totals.cycles, self.totals.cycles, per)


@dataclass
class Run:
    """One simulation: the program, the simulator's result and the chart's arrays."""

    program: NpuProgram
    result: object  # sim.SimResult
    model: ScheduleModel


def simulate_run(program: NpuProgram) -> Run:
    """Simulate `program` and build the chart's arrays (both off the GUI thread)."""
    from ..sim import simulate

    result = simulate(program)
    return Run(program, result, ScheduleModel.from_result(program, result))


def _buffer_dispatch(program: NpuProgram) -> dict[str, int]:
    """Each SRAM buffer's dispatch: the first task that touches it."""
    sram = {b.id for b in program.buffers if b.placement == "sram"}
    owner: dict[str, int] = {}
    for t in program.tasks:
        for s in t.steps:
            for b in (*s.srcs, *s.dsts):
                if b in sram and b not in owner:
                    owner[b] = t.dispatch
    return owner


def onnx_label(location: str) -> str:
    """The ONNX node names of a dispatch (`Conv_0, Relu_1`, or an MLIR `loc("conv0")`), or "-"."""
    if "loc(" not in location:
        return location.strip() or "-"
    names = [m.group(1) for m in _QUOTED.finditer(location) if not m.group(2)]
    return ", ".join(dict.fromkeys(names)) or "-"


# a quoted name, unless it is a file name followed by :line
_QUOTED = re.compile(r'"([^"]+)"(:\d+)?')
