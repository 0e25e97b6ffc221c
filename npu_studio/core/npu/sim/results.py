"""The result of a timing simulation and its versioned JSON form.

docs/npu-sim-result.schema.json is the JSON Schema of `to_dict`;
docs/npu-simulator.md explains the fields. Times are in clock cycles of
the target (`clock_mhz`), counted from 0; every interval is [start, end).

Per-step and per-task data are columnar (one column per field, indexed by
step or task id): a 100,000-task program has half a million steps and a
Python object per step would cost more than the simulation itself. A column
is an `array("q")` of int64: indexing and iterating give Python ints, numpy
reads it without a copy (`np.asarray`), and it holds 8 bytes a row where a
tuple of ints holds 36 (building those tuples was a fifth of `simulate`).
"""

from __future__ import annotations

import json
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ...errors import StudioError

FORMAT = "npu-studio.sim-result"
VERSION = 1
STEP_KINDS = ("dma_in", "compute", "dma_out", "cpu", "dma_copy")  # the codes in StepTable.kind
BOUNDS = ("compute", "memory", "cpu")


Column = array  # of typecode "q" (int64); see the module doc


def column(values) -> Column:
    """An int64 column of `values`: ints, or a numpy array (one copy of its bytes)."""
    if hasattr(values, "astype"):
        return array("q", values.astype("int64", copy=False).tobytes())
    return array("q", values)


class SimResultError(StudioError):
    """A result file that is not a simulation result of this version."""


@dataclass(frozen=True)
class StepTable:
    """Every step of every task, in program order (task by task, step by step)."""

    task: Column
    index: Column  # position of the step inside its task
    kind: Column  # index into STEP_KINDS
    engine: Column  # index into SimResult.engines
    start: Column
    end: Column
    bytes: Column  # moved (DMA steps)
    ops: Column  # MACs or element operations (compute, cpu)

    def __len__(self) -> int:
        return len(self.task)

    def rows(self) -> Iterator[tuple[int, int, int, int, int, int, int, int]]:
        """(task, index, kind, engine, start, end, bytes, ops) per step."""
        return zip(self.task, self.index, self.kind, self.engine, self.start, self.end,
                   self.bytes, self.ops)


@dataclass(frozen=True)
class TaskTable:
    """Per task (indexed by task id): its dispatch and the span of its steps."""

    dispatch: Column
    start: Column
    end: Column
    first_step: Column  # the task's steps are StepTable rows [first_step[i], first_step[i+1])

    def __len__(self) -> int:
        return len(self.dispatch)

    def steps_of(self, task: int, n_steps: int) -> range:
        end = self.first_step[task + 1] if task + 1 < len(self.first_step) else n_steps
        return range(self.first_step[task], end)


@dataclass(frozen=True)
class SramAllocation:
    """One SRAM buffer: where it lives and when it holds its addresses."""

    buffer: str
    offset: int
    size: int
    alloc: int  # cycle its first step may start
    free: int  # cycle its last step ended


@dataclass(frozen=True)
class DispatchStats:
    index: int
    start: int
    end: int
    cycles: int  # end - start
    mac_cycles: int  # MAC-array busy cycles of this dispatch
    mac_utilization: float  # MACs done / (MAC units x cycles)
    dram_read: int  # bytes
    dram_written: int  # bytes
    sram_peak: int  # bytes of this dispatch's SRAM buffers
    bound: str  # compute | memory | cpu


@dataclass(frozen=True)
class Overlap:
    """Cycles of the run by what was busy: DMA only, compute only, both, neither."""

    dma_only: int
    compute_only: int
    both: int
    idle: int


@dataclass(frozen=True)
class SimResult:
    target: str  # target name
    clock_mhz: int
    total_cycles: int
    engines: tuple[str, ...]  # "dma0", ..., "mac", "vector", "cpu"
    engine_busy: tuple[int, ...]  # busy cycles per engine
    steps: StepTable
    tasks: TaskTable
    sram_capacity: int
    sram_peak: int  # most bytes allocated at once
    sram_times: tuple[int, ...]  # occupancy changes: from sram_times[i] on, sram_bytes[i] are in use
    sram_bytes: tuple[int, ...]
    allocations: tuple[SramAllocation, ...]
    dispatches: tuple[DispatchStats, ...]
    overlap: Overlap
    critical_path: tuple[int, ...]  # task ids, first to last
    version: int = VERSION
    source: str = field(default="", compare=False)

    # -- derived -------------------------------------------------------------
    @property
    def time_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    def utilization(self, engine: str) -> float:
        busy = self.engine_busy[self.engines.index(engine)]
        return busy / self.total_cycles if self.total_cycles else 0.0

    def task_steps(self, task: int) -> range:
        return self.tasks.steps_of(task, len(self.steps))

    # -- JSON ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "target": self.target,
            "clock_mhz": self.clock_mhz,
            "total_cycles": self.total_cycles,
            "time_us": self.time_us,
            "engines": [
                {"name": n, "busy_cycles": b,
                 "utilization": b / self.total_cycles if self.total_cycles else 0.0}
                for n, b in zip(self.engines, self.engine_busy)
            ],
            "overlap": asdict(self.overlap),
            "sram": {
                "capacity": self.sram_capacity,
                "peak": self.sram_peak,
                "times": list(self.sram_times),
                "bytes": list(self.sram_bytes),
                "allocations": [asdict(a) for a in self.allocations],
            },
            "dispatches": [asdict(d) for d in self.dispatches],
            "critical_path": list(self.critical_path),
            "tasks": {k: list(v) for k, v in asdict(self.tasks).items()},
            "steps": {
                **{k: list(v) for k, v in asdict(self.steps).items() if k != "kind"},
                "kind": [STEP_KINDS[k] for k in self.steps.kind],
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "") -> "SimResult":
        if d.get("format") != FORMAT:
            raise SimResultError(source or None, f"not a simulation result (format != {FORMAT})")
        if d.get("version") != VERSION:
            raise SimResultError(source or None,
                                 f"simulation result version {d.get('version')!r} not supported "
                                 f"(want {VERSION})")
        s, t, m = d["steps"], d["tasks"], d["sram"]
        kind_code = {k: i for i, k in enumerate(STEP_KINDS)}
        return cls(
            target=d["target"], clock_mhz=d["clock_mhz"], total_cycles=d["total_cycles"],
            engines=tuple(e["name"] for e in d["engines"]),
            engine_busy=tuple(e["busy_cycles"] for e in d["engines"]),
            steps=StepTable(**{k: column(s[k]) for k in StepTable.__dataclass_fields__
                               if k != "kind"}, kind=column(kind_code[k] for k in s["kind"])),
            tasks=TaskTable(**{k: column(t[k]) for k in TaskTable.__dataclass_fields__}),
            sram_capacity=m["capacity"], sram_peak=m["peak"],
            sram_times=tuple(m["times"]), sram_bytes=tuple(m["bytes"]),
            allocations=tuple(SramAllocation(**a) for a in m["allocations"]),
            dispatches=tuple(DispatchStats(**x) for x in d["dispatches"]),
            overlap=Overlap(**d["overlap"]),
            critical_path=tuple(d["critical_path"]),
            version=d["version"], source=source,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def save_json(self, path: str | Path) -> None:
        from ...textio import write_output

        write_output(path, self.to_json())

    @classmethod
    def load_json(cls, path: str | Path) -> "SimResult":
        from ...textio import parse_json, read_bytes

        data = parse_json(read_bytes(path), path)  # BadFile: unreadable, not UTF-8, not JSON, unbounded
        if not isinstance(data, dict):
            raise SimResultError(path, "not a simulation result (not a JSON object)")
        try:
            return cls.from_dict(data, str(path))
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError, RecursionError) as e:
            what = f"missing key {e}" if isinstance(e, KeyError) else f"{e}"
            raise SimResultError(path, f"not a valid simulation result: {what}") from None
