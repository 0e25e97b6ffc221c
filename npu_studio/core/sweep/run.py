"""Running a sweep: models to flow text, points to batches, rows to the table.

`run_sweep(spec, out, executor)` evaluates every (model, point) not in
OUT/cache yet, then writes OUT/results.parquet and OUT/results.csv and
checks the table (monotonicity, no negative or NaN metric). Progress is
reported as (points done, points in all, seconds left); a set `cancel`
event stops it after the batches running (the finished rows stay in the
cache for `--resume`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Cancelled, StudioError
from ..npu.plan.tile_search import timing_key
from ..npu.store.workspace_io import flow_path
from ..textio import check_regular_file, parse_json, read_bytes, read_text
from ..workspace.workspace import Workspace, compile_model, default_workspace_for
from .analysis import Violation, monotonicity, sanity
from .batching import Batcher
from .evaluate import METRIC_NAMES, AREA_METRICS, area_metrics, plan_key
from .out_folder import RECORD, claim
from .spec import Point, SweepError, SweepSpec, key_line
from .table import RowCache, check_constraints, columns, model_hash, point_key, write_table
Progress = Callable[[int, int, float | None], None]


@dataclass
class SweepResult:
    rows: list[dict[str, Any]]
    columns: list[tuple[str, str]]
    parquet: Path | None
    csv: Path | None
    computed: int  # points evaluated by this run
    cached: int  # points found in the cache
    cancelled: bool = False
    violations: list[Violation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # negative or NaN metrics
    damaged: list[str] = field(default_factory=list)  # cached rows that could not be read: recomputed
    out: Path | None = None


def model_label(spec: SweepSpec, path: Path) -> str:
    try:
        return str(path.relative_to(spec.path.parent.resolve()))
    except ValueError:
        return str(path)


def flow_text(path: Path) -> str:
    """The compiled flow snapshot of a model file, workspace or flow .mlir file (a model file is
    compiled once into its default workspace; later sweeps reuse it while the model is the same)."""
    if path.is_dir():
        return read_text(flow_path(Workspace.open(path)))
    check_regular_file(path)  # a FIFO would block the comparison below, /dev/zero never end it
    if path.suffix == ".mlir":
        return read_text(path)
    ws_root = default_workspace_for(path)
    if Workspace.is_workspace(ws_root):
        ws = Workspace.open(ws_root)
        try:
            same = ws.source_path.read_bytes() == path.read_bytes()
        except OSError:
            same = False
        if same and "flow" in ws.manifest.phases:
            return read_text(flow_path(ws))
    return read_text(flow_path(compile_model(path)))


def _per_model(todo: list[tuple[str, str, Any, Any]]) -> list[tuple[str, list]]:
    """Per model, its points with those of one plan together (a worker reuses the plan), and the
    plans that differ only in SRAM size next to each other (they share the tile search's
    simulations, npu/tile_search.py)."""
    by_model: dict[str, dict[Any, dict[Any, list]]] = {}
    for mhash, key, target, plan in todo:
        by_model.setdefault(mhash, {}).setdefault(timing_key(plan), {}).setdefault(
            plan_key(plan), []).append((key, target, plan))
    return [(mhash, [x for plans in groups.values() for g in plans.values() for x in g])
            for mhash, groups in by_model.items()]


def run_sweep(spec: SweepSpec, out: Path, executor, *, resume: bool = False,
              models: list[tuple[str, str]] | None = None, on_progress: Progress | None = None,
              cancel: threading.Event | None = None) -> SweepResult:
    """Evaluate the spec's points on its models (or `models`: (label, flow text) pairs) into `out`,
    a folder a sweep made or a new one (out_folder.claim: anything else is refused first)."""
    out = claim(out, spec.path, {model_label(spec, p): str(p) for p in spec.models})
    cache = RowCache(out)
    if not resume:
        cache.clear()
    points = spec.points()
    targets = [spec.target_of(p) for p in points]
    _check_area_constraints(spec, targets)
    if models is None:
        models = [(model_label(spec, p), flow_text(p)) for p in spec.models]
    hashes = {label: model_hash(text) for label, text in models}
    texts = {hashes[label]: text for label, text in models}
    plans = [spec.plan_target(t) for t in targets]
    keys = {(label, p.index): point_key(hashes[label], t, plan)
            for label, _ in models for p, t, plan in zip(points, targets, plans)}
    todo, seen = [], set()
    for (label, idx), key in keys.items():
        if key not in seen and not cache.has(key):
            seen.add(key)
            todo.append((hashes[label], key, targets[idx], plans[idx]))
    total, done = len(todo), 0
    started = time.monotonic()
    cancelled = False
    try:
        for rows in executor.run(texts, Batcher(_per_model(todo), executor.workers)):
            for key, row in rows:
                cache.put(key, row)
            done += len(rows)
            if on_progress:
                rate = done / max(time.monotonic() - started, 1e-9)
                on_progress(done, total, (total - done) / rate if rate else None)
            if cancel is not None and cancel.is_set():
                executor.cancel()
                cancelled = True
                break
    finally:
        executor.close()
    return _assemble(spec, out, cache, models, points, keys, done, len(keys) - total, cancelled)


def _check_area_constraints(spec: SweepSpec, targets) -> None:
    """A constraint on the area alone that no point meets is bad input: nothing to run."""
    area_only = [c for c in spec.constraints if c[0] in AREA_METRICS]
    for what, names in (("constraints", [c[0] for c in spec.constraints]), ("metrics", spec.metrics)):
        unknown = [n for n in names if n not in METRIC_NAMES]
        if unknown:
            raise SweepError(spec.path, f"{what}: {unknown[0]}: unknown metric; known: "
                             + ", ".join(METRIC_NAMES), line=key_line(spec.path, what if what == "metrics"
                                                                   else unknown[0]))
    if area_only and not any(not check_constraints(area_metrics(t), area_only) for t in targets):
        metric, lo, hi = area_only[0]
        raise SweepError(spec.path, f"constraints.{metric}: no point meets it (areas "
                         f"{min(area_metrics(t)[metric] for t in targets):g} to "
                         f"{max(area_metrics(t)[metric] for t in targets):g})")


def _assemble(spec, out, cache, models, points, keys, computed, cached, cancelled) -> SweepResult:
    params = [n for n, _ in spec.parameters]
    cols = columns(params, spec.metrics)
    rows = []
    for label, _ in models:
        for p in points:
            key = keys[(label, p.index)]
            if not cache.has(key):
                continue  # cancelled before it ran
            row = {"model": label, "point": p.index, **p.as_dict(), **cache.get(key), "key": key}
            broken = check_constraints(row, spec.constraints) if row["status"] == "ok" else []
            row["meets_constraints"] = row["status"] == "ok" and not broken
            row["violations"] = "; ".join(broken)
            rows.append(row)
    parquet, csv = write_table(out, rows, cols)
    result = SweepResult(rows, cols, parquet, csv, computed, cached, cancelled,
                         monotonicity(rows, params), sanity(rows, list(METRIC_NAMES)), list(cache.damaged), out)
    if cancelled:
        raise _cancelled(result)
    if spec.constraints and rows and not any(r["meets_constraints"] for r in rows):
        metric = spec.constraints[0][0]
        raise SweepError(spec.path, f"constraints.{metric}: no point meets the constraints "
                         f"(results in {parquet})")
    return result


def _cancelled(result: SweepResult) -> Cancelled:
    e = Cancelled("sweep")
    e.finished = result.rows
    e.result = result
    return e


@dataclass
class OpenedSweep:
    """A finished sweep read back: its spec, rows and models (the app's Pareto view)."""

    spec: SweepSpec
    rows: list[dict[str, Any]]
    models: dict[str, Path]  # label -> model file, workspace or flow .mlir

    def params(self) -> list[str]:
        return [n for n, _ in self.spec.parameters]

    def program_of(self, row: dict[str, Any]):
        """The NPU program of a row's point (the pipeline on its model with its target)."""
        from ..npu.plan.passes import run_npu_pipeline

        point = Point(row["point"], tuple((n, row[n]) for n in self.params()))
        target = self.spec.target_of(point)
        program = run_npu_pipeline(flow_text(self.models[row["model"]]), self.spec.plan_target(target))
        return dataclasses.replace(program, target=target)  # simulated on the point's own target


def open_sweep(out: str | Path) -> OpenedSweep:
    """Read OUT/sweep.json, its spec and OUT/results.parquet; SweepError when one is missing."""
    from .spec import load_spec
    from .table import TABLE_NAME, read_table

    out = Path(out)
    try:
        record = parse_json(read_bytes(out / RECORD, 1 << 20), out / RECORD)
        spec_path, models = record["spec"], record["models"]
        models = {str(k): Path(v) for k, v in models.items()}
    except (StudioError, OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise SweepError(out, f"not a sweep's results folder (no readable {RECORD}; run "
                         "`npu-studio sweep SPEC --out` into it)") from None
    table = out / f"{TABLE_NAME}.parquet"
    if not table.is_file():
        raise SweepError(out, f"no {table.name} (the sweep did not finish; rerun it with --resume)")
    return OpenedSweep(load_spec(spec_path), read_table(table), models)
