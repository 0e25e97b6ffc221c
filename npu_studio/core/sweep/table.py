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
from pathlib import Path
from typing import Any

from ... import __version__
from ..npu.target.target import NpuTarget
from ..textio import write_bytes_atomic, write_text_atomic
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


class RowCache:
    def __init__(self, out: Path):
        self.dir = Path(out) / CACHE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def get(self, key: str) -> dict[str, Any]:
        return json.loads(self.path(key).read_text(encoding="utf-8"))

    def put(self, key: str, row: dict[str, Any]) -> None:
        write_text_atomic(self.path(key), json.dumps(row, sort_keys=True, allow_nan=True))  # floats round-trip exactly

    def clear(self) -> None:
        for p in self.dir.glob("*.json"):
            p.unlink()


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
    path = Path(path)
    if path.suffix == ".csv":
        import pyarrow.csv as pacsv
        table = pacsv.read_csv(path)
    else:
        import pyarrow.parquet as pq
        table = pq.read_table(path)
    return table.to_pylist()


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
