"""The sweep's results: a cache of rows by content hash, and the tidy table.

Cache: OUT/cache/<key>.json, one row's metrics per file, written
atomically when its batch completes (a cancelled sweep keeps what it
finished). The key is a SHA-256 of the model's flow text hash, the
target's every field and the tool's version, so `--resume` recomputes
only the points without a file, and a changed model, target or tool
computes afresh.

Table: one row per (model, point), in model then point order, columns
model, point, the parameters, status, reason, the metrics (units in
their names), meets_constraints, violations, key; written as Parquet
(pyarrow) and CSV.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from ... import __version__
from ..npu.target.target import NpuTarget
from ..errors import BadFile, os_error
from ..textio import parse_json, read_bytes, write_bytes_atomic, write_text_atomic
from ..workspace.confine import folder_inside
from .evaluate import METRICS

EVAL_VERSION = 1  # bump when evaluate's rows change meaning: old cache files are not reused
CACHE_DIR = "cache"
TABLE_NAME = "results"


def model_hash(flow_text: str) -> str:
    return hashlib.sha256(flow_text.encode("utf-8")).hexdigest()


def point_key(model: str, target: NpuTarget, plan_target: NpuTarget | None = None) -> str:
    """The content hash of (model, target, tool version), and of the bandwidth the tiles were
    chosen for when not the target's (spec key `tiles_for`)."""
    fields = {**target.to_dict(), "cost": target.cost.to_dict()}
    if plan_target is not None and plan_target != target:
        fields["plan_dram_bytes_per_cycle"] = plan_target.dram_bytes_per_cycle
    blob = json.dumps({"model": model, "target": fields, "tool": __version__, "eval": EVAL_VERSION},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_KEY_FILE = re.compile(r"[0-9a-f]{64}\.json")  # the only files the cache writes (and so may delete)
MAX_ROW_BYTES = 1 << 16  # a row is a few hundred bytes; a larger file is not one of ours


class RowCache:
    """OUT/cache/<key>.json. A file that is not a readable row (damaged, truncated, not a file) is
    treated as missing, so the point is computed again; its name is kept in `damaged`."""

    def __init__(self, out: Path):
        try:  # a received results folder whose cache/ is a link: refused, never written through (confine.py)
            self.dir = folder_inside(out, CACHE_DIR, where=Path(out) / CACHE_DIR)
        except OSError as exc:
            raise os_error(Path(out) / CACHE_DIR, exc, "cannot create folder") from None
        self._rows: dict[str, dict[str, Any]] = {}
        self.damaged: list[str] = []  # "cache/KEY.json: reason", once each

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def has(self, key: str) -> bool:
        return self._load(key) is not None

    def get(self, key: str) -> dict[str, Any]:
        row = self._load(key)
        if row is None:
            raise KeyError(key)
        return row

    def _load(self, key: str) -> dict[str, Any] | None:
        if key in self._rows:
            return self._rows[key]
        path = self.path(key)
        if not path.exists() and not path.is_symlink():
            return None
        try:
            row = _read_row(path)
        except BadFile as exc:
            if not any(d.startswith(f"{CACHE_DIR}/{path.name}:") for d in self.damaged):
                self.damaged.append(f"{CACHE_DIR}/{path.name}: {exc.reason}")
            return None
        self._rows[key] = row
        return row

    def put(self, key: str, row: dict[str, Any]) -> None:
        path = self.path(key)
        if path.is_dir() and not path.is_symlink():  # a damaged entry that is a folder: not ours to delete
            raise BadFile(path, "is a folder where the sweep keeps a row; move it away")
        write_text_atomic(path, json.dumps(row, sort_keys=True, allow_nan=True))  # floats round-trip exactly
        self._rows[key] = row

    def clear(self) -> None:
        """Drop the rows an earlier run of a sweep wrote (files named by a key, nothing else)."""
        self._rows.clear()
        for p in self.dir.iterdir():
            if _KEY_FILE.fullmatch(p.name) and p.is_file() and not p.is_symlink():
                p.unlink()


STATUSES = ("ok", "infeasible")  # what evaluate writes
_ROW_KEYS = frozenset({*(n for n, _ in METRICS), "status", "reason"})


def _read_row(path: Path) -> dict[str, Any]:
    """A cached row exactly as `evaluate` writes it: a status, a reason, and each metric null or a
    number of its type (an integer where the table holds integers), finite and not negative. Anything
    else (NaN, 1e400, 1.5 cycles, a key of the table's own such as `meets_constraints`) is no row of
    ours: BadFile, and the point is computed again."""
    if not path.is_file() or path.is_symlink():
        raise BadFile(path, "not a regular file")
    data = read_bytes(path, MAX_ROW_BYTES)  # a FIFO or a larger file is refused unread
    row = parse_json(data, path, "a cached row (JSON)")  # NaN, Infinity, 1e400, nesting: refused here
    if not isinstance(row, dict) or row.get("status") not in STATUSES:
        raise BadFile(path, f"not a row (status is not one of {', '.join(STATUSES)})")
    unknown = sorted(set(row) - _ROW_KEYS)
    if unknown:
        raise BadFile(path, f"{unknown[0][:40]}: not a key of a cached row")
    for name, typ in METRICS:
        v = row.get(name)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int if typ is int else (int, float)):
            raise BadFile(path, f"{name}: expected {'an integer' if typ is int else 'a number'}, got {v!r:.40}")
        if v < 0:
            raise BadFile(path, f"{name}: {v:g} is negative")
    if not isinstance(row.get("reason", ""), str):
        raise BadFile(path, "reason: expected text")
    return row


def columns(param_names: list[str], metrics: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(name, arrow type) of every column, in order."""
    keep = [(n, t) for n, t in METRICS if not metrics or n in metrics]
    return ([("model", "string"), ("point", "int64")] + [(p, "param") for p in param_names]
            + [("status", "string"), ("reason", "string")]
            + [(n, "int64" if t is int else "float64") for n, t in keep]
            + [("meets_constraints", "bool"), ("violations", "string"), ("key", "string")])


def to_arrow(rows: list[dict[str, Any]], cols: list[tuple[str, str]]):
    import pyarrow as pa

    _ARROW = {"string": pa.string, "int64": pa.int64, "float64": pa.float64, "bool": pa.bool_}
    arrays, fields = [], []
    for name, typ in cols:
        values = [r.get(name) for r in rows]
        if typ == "param":  # a parameter's values share one type (ints, floats or strings)
            arr = pa.array(values)
        else:
            arr = pa.array(values, type=_ARROW[typ]())
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_table(out: Path, rows: list[dict[str, Any]], cols: list[tuple[str, str]]) -> tuple[Path, Path]:
    """OUT/results.parquet and OUT/results.csv (each written to a temporary file, then renamed)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = to_arrow(rows, cols)
    out = Path(out)
    parquet, csv = out / f"{TABLE_NAME}.parquet", out / f"{TABLE_NAME}.csv"
    for path, write in ((parquet, lambda sink: pq.write_table(table, sink)),
                        (csv, lambda sink: pacsv.write_csv(table, sink))):
        sink = pa.BufferOutputStream()
        write(sink)
        write_bytes_atomic(path, sink.getvalue().to_pybytes())
    return parquet, csv


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a results.parquet (or .csv) as dicts."""
    import pyarrow as pa

    path = Path(path)
    if not path.is_file():
        raise BadFile(path, "not a regular file; expected a sweep's results table")
    try:
        if path.suffix == ".csv":
            import pyarrow.csv as pacsv
            table = pacsv.read_csv(path)
        else:
            import pyarrow.parquet as pq
            table = pq.read_table(path)
        rows = table.to_pylist()
    except (pa.ArrowException, ValueError, OSError, OverflowError) as exc:
        raise BadFile(path, f"not a results table: {' '.join(str(exc).split())[:200]}") from None
    for i, row in enumerate(rows):  # the columns every reader of a row uses
        if not isinstance(row.get("model"), str) or isinstance(row.get("point"), bool) \
                or not isinstance(row.get("point"), int) or not isinstance(row.get("status"), str):
            raise BadFile(path, f"row {i + 1}: expected a model, a point number and a status")
    return rows


def check_constraints(row: dict[str, Any], constraints) -> list[str]:
    """The constraints `row` breaks, as text ("area_mm2 12.5 > 10")."""
    out = []
    for metric, lo, hi in constraints:
        v = row.get(metric)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(f"{metric} unknown")
        elif lo is not None and v < lo:
            out.append(f"{metric} {v:g} < {lo:g}")
        elif hi is not None and v > hi:
            out.append(f"{metric} {v:g} > {hi:g}")
    return out
