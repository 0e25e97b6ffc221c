"""Measured against simulated: IREE's runtime profile of a build beside the NPU simulation, per dispatch.

`profile_dispatches` runs a module once under iree-run-module with device
profiling (`--device_profiling_mode=host-execution,queue-events`) and
reads the profile back through `iree-profile export --format=ireeperf-jsonl`:
one `host_execution_event` per dispatch execution, named by its export,
with start, end and duration in host nanoseconds. `measured_table` lines
those up with the dispatch sites of the NPU program (the k-th execution
of an export is the k-th site calling it, in program order) and with the
simulated cycles of each dispatch at the target clock.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ... import processes
from ...compile import toolchain
from ...errors import RunFailed
from ...compile.params import SCOPE
from ...textio import write_output
from ...workspace import trust
from ..program.npu_ir import NpuProgram
from ..sim.results import SimResult

PROFILING_MODE = "host-execution,queue-events"
COLUMNS = ("dispatch", "symbol", "unit", "measured_cpu_us", "simulated_npu_us", "ratio")


@dataclass(frozen=True)
class MeasuredDispatch:
    key: str  # the export's name
    start_ns: int  # host time
    end_ns: int
    duration_ns: int


@dataclass(frozen=True)
class Row:
    dispatch: int
    symbol: str
    unit: str  # where the NPU program runs it: mac | vector | dma | cpu
    measured_cpu_us: float | None  # None: not executed in the profiled run
    simulated_npu_us: float | None  # None: on the CPU in the NPU program
    start_us: float | None  # measured start, from the first dispatch of the run

    @property
    def ratio(self) -> float | None:
        """Measured CPU time over simulated NPU time: how many times faster the NPU would be."""
        if not self.measured_cpu_us or not self.simulated_npu_us:
            return None
        return self.measured_cpu_us / self.simulated_npu_us


def profile_dispatches(vmfb: Path, function: str, inputs: list[np.ndarray], *, parameters: Path | None = None,
                       plugin: Path | None = None, timeout: float | None = 900) -> list[MeasuredDispatch]:
    """Every dispatch execution of one call of `function`, in start order."""
    trust.require_for_path(vmfb, f"profiling {Path(vmfb).name}")
    with tempfile.TemporaryDirectory(prefix="npu-studio-profile-") as tmp:
        tmp = Path(tmp)
        prof = tmp / "run.ireeprof"
        cmd = [str(toolchain.runtime_tool("iree-run-module")), "--device=local-task", f"--module={vmfb}",
               f"--function={function}", f"--device_profiling_mode={PROFILING_MODE}",
               f"--device_profiling_output={prof}", f"--output=@{tmp / 'out.npy'}"]
        if plugin is not None:
            cmd.append(f"--executable_plugin={plugin}")
        if parameters is not None:
            cmd.append(f"--parameters={SCOPE}={parameters}")
        for i, a in enumerate(inputs):
            np.save(tmp / f"in{i}.npy", a)
            cmd.append(f"--input=@{tmp / f'in{i}.npy'}")
        _run(cmd, vmfb, timeout)
        export = _run([str(toolchain.runtime_tool("iree-profile")), "export", "--format=ireeperf-jsonl", str(prof)],
                      prof, timeout)
    return parse_profile(export)


def _run(cmd: list[str], what: Path, timeout: float | None) -> str:
    try:
        proc = processes.run_child(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunFailed(what, f"{Path(cmd[0]).name} did not finish within {timeout:g} s; stopped") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise RunFailed(what, lines[-1] if lines else f"{Path(cmd[0]).name} exited with {proc.returncode}")
    return proc.stdout


_TIMES = ("start_host_time_ns", "end_host_time_ns", "duration_ns")


def parse_profile(jsonl: str, path: Path | str = "<iree-profile export>") -> list[MeasuredDispatch]:
    """The dispatch executions of an `ireeperf-jsonl` export; BadFile naming the line of a bad record."""
    out = []
    for no, line in enumerate(jsonl.splitlines(), 1):
        if '"host_execution_event"' not in line:
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise RunFailed(path, f"not a profile record: {str(exc).splitlines()[0][:120]}", line=no) from None
        if not isinstance(rec, dict):
            raise RunFailed(path, "not a profile record (not an object)", line=no)
        if rec.get("record_type") == "host_execution_event" and rec.get("op") == "dispatch" and rec.get("valid", True):
            key, times = rec.get("key"), [rec.get(k) for k in _TIMES]
            if not isinstance(key, str) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                   and 0 <= t < 1 << 63 for t in times):
                raise RunFailed(path, "a dispatch record without its key and times in nanoseconds", line=no)
            out.append(MeasuredDispatch(key, *times))
    out.sort(key=lambda m: m.start_ns)
    return out


def measured_table(program: NpuProgram, sim: SimResult, events: list[MeasuredDispatch]) -> list[Row]:
    """One row per dispatch of `program`, in program order."""
    by_key: dict[str, list[MeasuredDispatch]] = {}
    for e in events:
        by_key.setdefault(e.key, []).append(e)
    t0 = events[0].start_ns if events else 0
    cycles = {d.index: d.cycles for d in sim.dispatches}
    rows = []
    for d in program.dispatches:
        runs = by_key.get(d.symbol)
        e = runs.pop(0) if runs else None
        simulated = cycles.get(d.index) if d.legal else None
        rows.append(Row(d.index, d.symbol, d.unit if d.legal else "cpu",
                        e.duration_ns / 1000 if e else None,
                        simulated / sim.clock_mhz if simulated is not None else None,
                        (e.start_ns - t0) / 1000 if e else None))
    return rows


def sort_rows(rows: list[Row], column: str = "ratio") -> list[Row]:
    """Largest first; rows without a value last (in dispatch order)."""
    if column not in COLUMNS:
        raise ValueError(f"unknown column {column!r}; expected one of {', '.join(COLUMNS)}")
    value = (lambda r: r.ratio) if column == "ratio" else (lambda r: getattr(r, column))
    have = [r for r in rows if value(r) is not None]
    if column in ("dispatch", "symbol", "unit"):
        return sorted(rows, key=lambda r: getattr(r, column))
    return sorted(have, key=value, reverse=True) + [r for r in rows if value(r) is None]


def format_table(rows: list[Row]) -> list[str]:
    def num(v, fmt):
        return format(v, fmt) if v is not None else f"{'-':>{int(fmt.split('.')[0])}}"
    lines = [f"{'#':>4}  {'unit':<6} {'measured CPU µs':>16} {'simulated NPU µs':>17} {'ratio':>8}  symbol"]
    for r in rows:
        lines.append(f"{r.dispatch:>4}  {r.unit:<6} {num(r.measured_cpu_us, '16.1f')} "
                     f"{num(r.simulated_npu_us, '17.1f')} {num(r.ratio, '8.2f')}  {r.symbol}")
    return lines


def write_csv(rows: list[Row], path: Path) -> None:
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([r.dispatch, r.symbol, r.unit, r.measured_cpu_us, r.simulated_npu_us, r.ratio])
    write_output(path, text.getvalue())  # BadFile naming `path`: a FIFO, a full disk


def cpu_track_events(rows: list[Row], pid: int = 2) -> list[dict]:
    """The measured CPU run as Chrome trace events: one slice per dispatch, its own process row."""
    ev = [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": "CPU (measured, IREE)"}},
          {"ph": "M", "pid": pid, "tid": 1, "name": "thread_name", "args": {"name": "dispatches"}}]
    for r in rows:
        if r.measured_cpu_us is None:
            continue
        ev.append({"ph": "X", "pid": pid, "tid": 1, "cat": "cpu", "name": f"#{r.dispatch} {r.symbol}",
                   "ts": r.start_us, "dur": r.measured_cpu_us,
                   "args": {"dispatch": r.dispatch, "simulated_npu_us": r.simulated_npu_us, "ratio": r.ratio}})
    return ev


def write_trace(program: NpuProgram, sim: SimResult, rows: list[Row], path: Path) -> None:
    """The simulated NPU schedule (sim/trace.py) and the measured CPU run, in one Perfetto file."""
    from ..sim.trace import trace_events

    data = {"traceEvents": trace_events(program, sim) + cpu_track_events(rows), "displayTimeUnit": "ns",
            "otherData": {"target": sim.target, "clock_mhz": sim.clock_mhz, "total_cycles": sim.total_cycles,
                          "measured": "IREE local-task host execution, µs"}}
    write_output(path, json.dumps(data, separators=(",", ":")))


def rows_to_json(rows: list[Row]) -> list[dict]:
    return [{**asdict(r), "ratio": r.ratio} for r in rows]


def aligned_cpu_bars(task_start, task_dispatch, clock_mhz: float, rows: list[Row]):
    """(starts, ends, dispatches) in cycles: each measured dispatch drawn from where its simulated
    NPU run starts, as long as it took on the CPU (µs at the target clock), so the two compare side by side."""
    task_start, task_dispatch = np.asarray(task_start, float), np.asarray(task_dispatch)
    starts, ends, dispatches = [], [], []
    for r in rows:
        if r.measured_cpu_us is None:
            continue
        mine = task_start[task_dispatch == r.dispatch]
        if not len(mine):
            continue
        starts.append(float(mine.min()))
        ends.append(starts[-1] + r.measured_cpu_us * clock_mhz)
        dispatches.append(r.dispatch)
    return np.asarray(starts, float), np.asarray(ends, float), np.asarray(dispatches, np.int64)
