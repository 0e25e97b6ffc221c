"""Measured cycles from a file, set beside the simulated ones.

The file is CSV with a header row: an id column, `task` or `dispatch` (a file with both is per
task), and a `cycles` column; other columns are ignored, so the table `npu-studio simulate --csv`
writes is accepted as it is. Lines starting with `#` are comments. Every problem is one
`MeasuredError` naming file:line.

`measure --measured` and `calibrate` keep the measurements of a workspace in its
`npu/measured.csv` (the same form, with the program they were taken against), so the app's
schedule shows them beside the simulation (`recorded`).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from ...errors import BadFile
from ...textio import read_text
from ...workspace.confine import write_text_inside
from ..program.npu_ir import NpuProgram
from ..sim.results import SimResult


class MeasuredError(BadFile):
    """A measured-cycles file that cannot be used: file:line: reason."""


@dataclass(frozen=True)
class Measured:
    path: Path
    level: str  # "dispatch" or "task": what the ids name
    cycles: dict[int, float]  # id -> measured cycles
    lines: dict[int, int]  # id -> its line in the file


MAX_MEASURED_BYTES = 256 << 20  # a row per task of the largest programs is a few MiB
RECORD = Path("npu") / "measured.csv"  # in a workspace
_PROGRAM_TAG = "# program sha256 "


def read_measured(path: str | Path) -> Measured:
    path = Path(path)
    text = read_text(path, MAX_MEASURED_BYTES)  # a FIFO or a device: refused without waiting
    rows = [(no, row) for no, row in _rows(text, path) if row and not row[0].lstrip().startswith("#")
            and any(c.strip() for c in row)]
    if not rows:
        raise MeasuredError(path, "no header row: expected columns `dispatch` or `task`, and `cycles`", line=1)
    head_no, head = rows[0]
    names = [c.strip().lower() for c in head]
    level = "task" if "task" in names else "dispatch" if "dispatch" in names else None
    if level is None or "cycles" not in names:
        want = "`task` or `dispatch`" if level is None else "`cycles`"
        raise MeasuredError(path, f"header has no {want} column (got {', '.join(names) or 'nothing'})", line=head_no)
    id_col, cyc_col = names.index(level), names.index("cycles")
    cycles: dict[int, float] = {}
    lines: dict[int, int] = {}
    for no, row in rows[1:]:
        if len(row) <= max(id_col, cyc_col):
            raise MeasuredError(path, f"{len(row)} columns, the header has {len(head)}", line=no)
        raw_id, raw_cycles = row[id_col].strip(), row[cyc_col].strip()
        if not (raw_id.isascii() and raw_id.isdigit()):  # str.isdigit alone takes '²', which int() refuses
            raise MeasuredError(path, f"{level} {raw_id!r}: expected a non-negative integer id", line=no)
        try:
            value = float(raw_cycles)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:  # nothing on a chip takes no cycles: a unit or export slip
            raise MeasuredError(path, f"cycles {raw_cycles!r}: expected a positive number", line=no)
        key = int(raw_id)
        if key in cycles:
            raise MeasuredError(path, f"{level} {key} measured twice (first on line {lines[key]})", line=no)
        cycles[key], lines[key] = value, no
    if not cycles:
        raise MeasuredError(path, "no measurements after the header", line=head_no)
    return Measured(path, level, cycles, lines)


def _rows(text: str, path: Path):
    reader = csv.reader(io.StringIO(text))
    try:
        start = 1
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as e:
        raise MeasuredError(path, f"not CSV: {e}", line=reader.line_num) from None


def check_ids(measured: Measured, program: NpuProgram) -> None:
    """MeasuredError naming the line of an id the program does not have."""
    known = {d.index for d in program.dispatches} if measured.level == "dispatch" else {t.id for t in program.tasks}
    for key, no in measured.lines.items():
        if key not in known:
            raise MeasuredError(measured.path, f"{measured.level} {key}: the program has no such {measured.level} "
                                               f"({len(known)} {'dispatches' if measured.level == 'dispatch' else 'tasks'})", line=no)


def simulated_cycles(result: SimResult, level: str) -> dict[int, int]:
    """Cycles per dispatch or per task of a simulation: end - start of its steps."""
    if level == "dispatch":
        return {d.index: d.cycles for d in result.dispatches}
    return {i: e - s for i, (s, e) in enumerate(zip(result.tasks.start, result.tasks.end))}


def per_dispatch(measured: Measured, simulated: dict[int, int], program: NpuProgram) -> dict[int, tuple[float, int]]:
    """(measured, simulated) per dispatch; a per-task file adds up its dispatch's task cycles."""
    if measured.level == "dispatch":
        return {k: (v, simulated[k]) for k, v in measured.cycles.items()}
    out: dict[int, tuple[float, int]] = {}
    dispatch_of = {t.id: t.dispatch for t in program.tasks}
    for task, value in measured.cycles.items():
        m, s = out.get(dispatch_of[task], (0.0, 0))
        out[dispatch_of[task]] = (m + value, s + simulated[task])
    return out


def relative_error(measured: float, simulated: float) -> float:
    """(simulated - measured) / measured; a zero measurement counts as 1 cycle."""
    return (simulated - measured) / max(measured, 1.0)


def task_csv_text(result: SimResult) -> str:
    """One row per task: its id, dispatch and simulated cycles (a measured-cycles file's own form)."""
    lines = ["task,dispatch,start (cycles),end (cycles),cycles"]
    lines += [f"{i},{d},{s},{e},{e - s}" for i, (d, s, e) in
              enumerate(zip(result.tasks.dispatch, result.tasks.start, result.tasks.end))]
    return "\n".join(lines) + "\n"


COMPARE_COLUMNS = ("dispatch", "task", "measured (cycles)", "simulated (cycles)", "error (%)")


def comparison(program: NpuProgram, result: SimResult, measured: Measured) -> list[tuple]:
    """Rows of COMPARE_COLUMNS: per task (task-level files) then per dispatch (task is "" there;
    a task-level file's dispatch rows add up its tasks)."""
    simulated = simulated_cycles(result, measured.level)
    rows: list[tuple] = []
    if measured.level == "task":
        dispatch_of = {t.id: t.dispatch for t in program.tasks}
        rows += [(dispatch_of[k], k, v, simulated[k], round(100 * relative_error(v, simulated[k]), 2))
                 for k, v in sorted(measured.cycles.items())]
    rows += [(d, "", m, s, round(100 * relative_error(m, s), 2))
             for d, (m, s) in sorted(per_dispatch(measured, simulated, program).items())]
    return rows


def format_comparison(rows: list[tuple]) -> list[str]:
    out = [f"{'dispatch':>8} {'task':>6} {'measured':>14} {'simulated':>14} {'error':>9}"]
    out += [f"{d:>8} {t!s:>6} {m:>14.0f} {s:>14} {e:>+8.2f}%" for d, t, m, s, e in rows]
    return out


def _program_sha(root: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256((Path(root) / "npu" / "model.npu.json").read_bytes()).hexdigest()
    except OSError:
        return ""


def record(root: str | Path, measured: Measured) -> Path:
    """Keep `measured` in the workspace at `root` (npu/measured.csv), with the program it was taken against."""
    lines = [f"# measured cycles from {measured.path} (npu-studio measure / calibrate)",
             f"{_PROGRAM_TAG}{_program_sha(Path(root))}", f"{measured.level},cycles"]
    lines += [f"{k},{v!r}" for k, v in sorted(measured.cycles.items())]
    return write_text_inside(Path(root), RECORD, "\n".join(lines) + "\n")


def recorded(root: str | Path, program: NpuProgram) -> Measured | None:
    """The workspace's recorded measurements that fit `program`: per dispatch while it has those
    dispatches (a program planned again for a calibrated target is compared with them), per task
    only for the program they were taken against. None when there are none, or they do not fit."""
    path = Path(root) / RECORD
    if not path.is_file():
        return None
    try:
        measured = read_measured(path)
        check_ids(measured, program)
    except BadFile:
        return None
    if measured.level == "task":
        tag = next((ln[len(_PROGRAM_TAG):].strip() for ln in read_text(path, MAX_MEASURED_BYTES).splitlines()
                    if ln.startswith(_PROGRAM_TAG)), "")
        if tag != _program_sha(Path(root)):
            return None
    return measured
