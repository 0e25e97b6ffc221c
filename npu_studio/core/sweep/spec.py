"""A sweep specification (`sweep.toml`, docs/sweep.md): base target, parameters, models.

    target = "default"                      # bundled name or a path (relative to the spec)
    models = ["model.onnx", "ws/", "flow.mlir"]
    metrics = ["cycles", "energy_pj"]       # optional: columns kept besides the parameters

    [parameters]                            # dotted target keys (docs/npu-target.md)
    "sram.size_kib" = { log2 = [64, 2048] } # powers of two from 64 to 2048
    "dram.bytes_per_cycle" = [16, 32, 64]   # a list
    "clock_mhz" = { range = [500, 1000, 250] }  # start, stop (inclusive), step
    "mac_array.rows+mac_array.cols" = [8, 16]   # one value for several keys

    [sampling]                              # optional; default every combination
    method = "latin-hypercube"              # grid | random | latin-hypercube
    points = 50
    seed = 1

    [constraints]                           # optional: bounds on any metric
    area_mm2 = { max = 40.0 }

Errors are SweepError: `spec.toml:LINE: key: reason`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StudioError
from ..npu.backend import registry
from ..npu.target.target import NpuTarget, TargetError, parse_target, read_target_text, target_file, toml_value
from .spec_values import MAX_POINTS, MAX_TEXT, check_point_count, parameter_values, range_checked

SAMPLING = ("grid", "random", "latin-hypercube")
TILES_FOR = ("each-point", "base-bandwidth")
MAX_SPEC_BYTES = 1 << 20
_TOP_KEYS = ("target", "models", "metrics", "parameters", "sampling", "constraints", "name",
             "tiles_for")


class SweepError(StudioError):
    """A bad sweep specification or sweep request: one line naming the file and key."""


@dataclass(frozen=True)
class Point:
    index: int
    values: tuple[tuple[str, Any], ...]  # (parameter, value) in the spec's order

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True)
class SweepSpec:
    path: Path
    name: str
    base_text: str  # the base target's TOML
    base_path: Path
    base: NpuTarget
    models: tuple[Path, ...]
    parameters: tuple[tuple[str, tuple[Any, ...]], ...]  # (name, values) in order
    metrics: tuple[str, ...]  # () keeps every metric
    sampling: str
    samples: int
    seed: int
    constraints: tuple[tuple[str, float | None, float | None], ...]  # (metric, min, max)
    tiles_for: str = "each-point"  # base-bandwidth: tiles chosen at the base bandwidth, reused
    backend: str = "generic"  # the NPU backend whose keys, rules and costs the targets take

    def plan_target(self, target: NpuTarget) -> NpuTarget:
        """The target a point's program is planned for: its own, or with the base's bandwidth."""
        if self.tiles_for == "base-bandwidth":
            return dataclasses.replace(target, dram_bytes_per_cycle=self.base.dram_bytes_per_cycle)
        return target

    def points(self) -> list[Point]:
        """The design points, in a fixed order (the same for every run of the spec)."""
        names = [n for n, _ in self.parameters]
        lists = [vs for _, vs in self.parameters]
        if self.sampling == "grid":
            combos = itertools.product(*lists)
        else:
            rng = np.random.default_rng(self.seed)
            n = self.samples
            if self.sampling == "random":
                idx = [rng.integers(0, len(vs), n) for vs in lists]
            else:  # a Latin hypercube over each parameter's value indices: n strata each
                idx = [np.minimum(((rng.permutation(n) + rng.random(n)) / n * len(vs)).astype(int),
                                  len(vs) - 1) for vs in lists]
            combos = (tuple(vs[int(i[k])] for vs, i in zip(lists, idx)) for k in range(n))
        seen, out = set(), []
        for combo in combos:
            if combo in seen:
                continue
            seen.add(combo)
            out.append(Point(len(out), tuple(zip(names, combo))))
        return out

    def base_values(self) -> dict[str, Any]:
        """Each parameter's value in the base target (the first key of a joint one); None if unset."""
        data = tomllib.loads(self.base_text)
        out = {}
        for name, _ in self.parameters:
            node: Any = data
            for part in name.split("+")[0].split("."):
                node = node.get(part) if isinstance(node, dict) else None
            out[name] = node
        return out

    def target_of(self, point: Point) -> NpuTarget:
        """The base target with the point's values (SweepError naming the parameter)."""
        data = tomllib.loads(self.base_text)
        for name, value in point.values:
            for key in name.split("+"):
                *tables, leaf = key.split(".")
                node = data
                for t in tables:
                    node = node.setdefault(t, {})
                    if not isinstance(node, dict):
                        raise SweepError(self.path, f"parameters.{name}: {t} is not a table of the target",
                                         line=key_line(self.path, name))
                node[leaf] = value
        try:
            chosen = registry.load(self.backend)
            return parse_target(to_toml(data), self.base_path, chosen.name, chosen.target_keys)
        except TargetError as e:
            which = _which(e, point)
            raise SweepError(self.path, f"parameters.{which} = {dict(point.values).get(which)!r}: "
                             f"{e.key}: {e.reason}", line=key_line(self.path, which)) from None


def _which(e: TargetError, point: Point) -> str:
    """The parameter a target error is about (its key), else the first."""
    for name, _ in point.values:
        if e.key in name.split("+"):
            return name
    return point.values[0][0] if point.values else ""


def key_line(path: Path, key: str) -> int | None:
    """1-based line where `key` (bare or quoted) is assigned in the spec file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    pat = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
    for no, line in enumerate(text.splitlines(), 1):
        if pat.match(line):
            return no
    return None


def to_toml(data: dict, prefix: str = "") -> str:
    """TOML text of parsed TOML `data` (tables as [a.b] headers)."""
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
            lines.append(f"\n[{name}]")
            lines.append(to_toml(v, name))
    return "\n".join(lines)


def _values(path: Path, name: str, raw: Any) -> tuple[Any, ...]:
    shown = name if len(name) <= 80 else name[:60] + "..."  # one line a person reads

    def bad(reason: str) -> SweepError:
        return SweepError(path, f"parameters.{shown}: {reason}",
                          line=key_line(path, name) if len(name) <= MAX_TEXT else None)

    return parameter_values(name, raw, bad)


def _table(data: dict, key: str, bad) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise bad(key, f"expected a table, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "a number" if isinstance(value, (int, float)) and not isinstance(value, bool) else \
        {bool: "true or false", str: "text", list: "a list"}.get(type(value), type(value).__name__)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


MAX_DEPTH = 16  # tables and lists inside each other: a spec needs 4 ([parameters] "key" = { range = [...] })


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether lists and tables in `data` nest more than `limit` levels (walked without recursion)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                return True
            todo.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False


def load_spec(path: str | Path, backend: str | None = None) -> SweepSpec:
    """Read and check a sweep spec for `backend` (None: the generic NPU; BackendError names a
    missing one); every target of its points is built (and checked) later."""
    path = Path(path)
    chosen = registry.load(backend)
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or a device would block or never end
            raise SweepError(path, "not a regular file")
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise SweepError(path, f"larger than {MAX_SPEC_BYTES:,} bytes; not a sweep spec")
        text = path.read_text(encoding="utf-8")
    except ValueError:  # a NUL in the name
        raise SweepError(path, "cannot read: a path cannot hold a NUL byte") from None
    except OSError as e:
        raise SweepError(path, f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SweepError(path, f"not UTF-8 text: byte offset {e.start} cannot be decoded") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise SweepError(path, str(e).split(" (at")[0], line=int(m.group(1)) if m else None) from None
    except RecursionError:  # tomllib parses nested lists and tables by recursion
        raise SweepError(path, f"nested deeper than Python's TOML reader goes; a spec nests at most {MAX_DEPTH} "
                               "levels") from None
    if _deeper_than(data, MAX_DEPTH):  # before any check walks it (by recursion too)
        raise SweepError(path, f"nested more than {MAX_DEPTH} levels deep; a spec's values are numbers, "
                               "text, lists of them and tables")

    def bad(key: str, reason: str) -> SweepError:
        return SweepError(path, f"{key}: {reason}", line=key_line(path, key.split(".")[-1]))

    for key in data:
        if key not in _TOP_KEYS:
            raise bad(key, "unknown key; known: " + ", ".join(_TOP_KEYS))
    target_arg = data.get("target", None if backend else "default")
    if target_arg is not None and (not isinstance(target_arg, str) or not target_arg or "\0" in target_arg
                                   or len(target_arg) > MAX_TEXT):
        raise bad("target", "expected a bundled target name or a path")
    base_path = chosen.default_target if target_arg is None else target_file(
        target_arg if not (path.parent / target_arg).exists() else path.parent / target_arg)
    try:
        base_text = read_target_text(base_path)
        base = parse_target(base_text, base_path, chosen.name, chosen.target_keys)
    except TargetError as e:
        raise SweepError(path, f"target: {e}", line=key_line(path, "target")) from None
    models = data.get("models")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise bad("models", "expected a non-empty list of model files or workspaces")
    if len(models) > 1000:
        raise bad("models", f"{len(models):,} models; at most 1,000")
    for m in models:
        if "\0" in m or len(m) > 4096:
            raise bad("models", f"{m[:80]!r}: not a path (a NUL byte, or longer than 4,096 characters)")
    model_paths = tuple((path.parent / m).resolve() for m in models)
    for m, p in zip(models, model_paths):
        if not p.exists():
            raise SweepError(path, f"models: {m}: no such file or directory", line=key_line(path, "models"))
        if not (p.is_file() or p.is_dir()):
            raise SweepError(path, f"models: {m}: not a regular file (a FIFO, a device or a socket)",
                             line=key_line(path, "models"))
    params = data.get("parameters", {})
    if not isinstance(params, dict) or not params:
        raise bad("parameters", "expected a table with at least one parameter")
    if len(params) > 64:
        raise bad("parameters", f"{len(params)} parameters; at most 64")
    parameters = tuple((name, _values(path, name, raw)) for name, raw in params.items())
    metrics = data.get("metrics", [])
    if not isinstance(metrics, list) or len(metrics) > 100 or not all(isinstance(m, str) for m in metrics):
        raise bad("metrics", "expected a list of metric names")
    sampling = _table(data, "sampling", bad)
    for key in sampling:
        if key not in ("method", "points", "seed"):
            raise bad(f"sampling.{key}", "unknown key; known: method, points, seed")
    method = sampling.get("method", "grid")
    if method not in SAMPLING:
        raise bad("sampling.method", "expected one of " + ", ".join(SAMPLING))
    samples = sampling.get("points", 0)
    if method != "grid" and (not isinstance(samples, int) or isinstance(samples, bool) or samples < 1):
        raise bad("sampling.points", f"expected a positive number of points to sample (at most {MAX_POINTS:,})")
    seed = sampling.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 63:
        raise bad("sampling.seed", "expected an integer from 0 to 2**63-1")
    check_point_count(parameters, method, samples, bad)
    tiles_for = data.get("tiles_for", "each-point")
    if tiles_for not in TILES_FOR:
        raise bad("tiles_for", "expected one of " + ", ".join(TILES_FOR))
    name = data.get("name", path.stem)
    if not isinstance(name, str) or len(name) > MAX_TEXT:
        raise bad("name", f"expected text of at most {MAX_TEXT} characters")
    constraints = []
    for metric, bound in _table(data, "constraints", bad).items():
        if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"} or not all(
                _finite(v) for v in bound.values()):
            raise bad(f"constraints.{metric}", "expected { min = NUMBER } and/or { max = NUMBER }, finite")
        constraints.append((metric, bound.get("min"), bound.get("max")))
    spec = SweepSpec(path, name, base_text, base_path, base, model_paths,
                     parameters, tuple(metrics), method, samples, seed, tuple(constraints), tiles_for,
                     chosen.name)
    # Every value builds a valid target. Integer keys were range-checked without one (spec_values):
    # their first value builds one (the key exists, its tables are tables); every value of other
    # keys builds one (their checks are the target's own).
    for name, vals in parameters:
        for v in (vals[:1] if range_checked(name) else vals):
            spec.target_of(Point(0, ((name, v),)))
    return spec
