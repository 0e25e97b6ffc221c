"""A sweep spec's parameter values, bounded and range-checked before any target is built.

Every list is bounded (the bound is in the message): a parameter takes at most MAX_VALUES
values, a sweep at most MAX_POINTS points, a key at most MAX_KEY_PARTS dotted parts. A range's
length is computed before its values are (a step of 1e-300 or NaN, an end of 1e18 or inf are
refused at once), and every value of an integer key of the target is checked against that key's
range (npu/target INT_RANGES) before the first target is built, so a bad last value of a long
list is found in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..npu.target.target import INT_RANGES, range_problem

MAX_VALUES = 10_000  # values of one parameter
MAX_POINTS = 100_000  # points of a sweep (a grid's combinations, or sampling.points)
MAX_KEY_PARTS = 3  # `vector.functions.add` is the deepest key a target has
MAX_JOINT = 16  # keys given one value together (`a.b+c.d`)
MAX_TEXT = 1000  # characters of a string value or a key

Bad = Callable[[str], Exception]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parameter_values(name: str, raw: Any, bad: Bad) -> tuple[Any, ...]:
    """The values `raw` (a list, { log2 = [lo, hi] } or { range = [start, stop, step] }) stands for."""
    check_key(name, bad)
    if isinstance(raw, list):
        if len(raw) > MAX_VALUES:
            raise bad(f"{len(raw):,} values; at most {MAX_VALUES:,} per parameter")
        for v in raw:
            _check_value(v, bad)
        vals = tuple(raw)
    elif isinstance(raw, dict) and set(raw) == {"log2"}:
        lo_hi = raw["log2"]
        if not (isinstance(lo_hi, list) and len(lo_hi) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in lo_hi)):
            raise bad("log2 wants [low, high], two positive integers")
        lo, hi = lo_hi  # TOML integers are 64-bit: at most 63 powers of two
        vals = tuple(2 ** k for k in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1))
    elif isinstance(raw, dict) and set(raw) == {"range"}:
        vals = _range(raw["range"], bad)
    else:
        raise bad("expected a list of values, { log2 = [low, high] } or { range = [start, stop, step] }")
    if not vals:
        raise bad("empty: no value to try")
    if len(set(map(repr, vals))) != len(vals):
        raise bad("a value is listed twice")
    _check_ranges(name, vals, bad)
    return vals


def _range(r: Any, bad: Bad) -> tuple[Any, ...]:
    if not (isinstance(r, list) and len(r) == 3 and all(_number(x) for x in r)):
        raise bad("range wants [start, stop, step], three numbers")
    start, stop, step = r
    if not all(math.isfinite(x) for x in r):
        raise bad(f"range [{start}, {stop}, {step}]: every number must be finite")
    if not step > 0:
        raise bad("range wants [start, stop, step] with a positive step")
    count = (float(stop) - float(start)) / float(step)  # before any value is made
    if not math.isfinite(count) or count + 1 > MAX_VALUES:
        raise bad(f"range [{start}, {stop}, {step}] has more than {MAX_VALUES:,} values "
                  f"(at most {MAX_VALUES:,} per parameter)")
    n = math.floor((stop - start) / step + 1e-9) + 1
    vals = tuple(start + k * step for k in range(max(n, 0)))
    if len(set(vals)) != len(vals):  # a step below the resolution of the floats around start
        raise bad(f"range [{start}, {stop}, {step}]: the step is too small to tell values apart")
    return vals


def check_key(name: str, bad: Bad) -> None:
    if not isinstance(name, str) or not name or len(name) > MAX_TEXT or "\0" in name:
        raise bad(f"expected a target key of at most {MAX_TEXT} characters")
    keys = name.split("+")
    if len(keys) > MAX_JOINT:
        raise bad(f"{len(keys)} keys joined by '+'; at most {MAX_JOINT}")
    for key in keys:
        parts = key.split(".")
        if len(parts) > MAX_KEY_PARTS:
            raise bad(f"{key}: {len(parts)} dotted parts; a target key has at most {MAX_KEY_PARTS}")
        if not all(parts):
            raise bad(f"{key}: an empty part in a dotted key")


def _check_value(v: Any, bad: Bad, depth: int = 0) -> None:
    if isinstance(v, bool) or isinstance(v, int):
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise bad(f"{v} is not a finite number")
        return
    if isinstance(v, str):
        if len(v) > MAX_TEXT or "\0" in v:
            raise bad(f"a text value of at most {MAX_TEXT} characters without NUL is expected")
        return
    if isinstance(v, list) and depth == 0:  # a list-valued key (dtypes.supported)
        if len(v) > 64:
            raise bad("a list value of at most 64 items is expected")
        for x in v:
            _check_value(x, bad, depth + 1)
        return
    raise bad(f"{type(v).__name__} is not a value a target key takes")


def _range_key(key: str) -> str | None:
    if key in INT_RANGES:
        return key
    if key.startswith("vector.functions.") and key.count(".") == 2:
        return "vector.functions.*"
    return None


def _check_ranges(name: str, vals: tuple[Any, ...], bad: Bad) -> None:
    """Every value of an integer key in its range (the target's own rule), without building targets."""
    for key in name.split("+"):
        rk = _range_key(key)
        if rk is None:
            continue
        for v in vals:
            problem = range_problem(rk, v)
            if problem:
                raise bad(f"{v!r}: {key}: {problem}")


def range_checked(name: str) -> bool:
    """True when every key of `name` is an integer key whose values `_check_ranges` checked."""
    return all(_range_key(k) is not None for k in name.split("+"))


def check_point_count(parameters, sampling: str, samples: int, bad: Callable[[str, str], Exception]) -> None:
    """A grid's combinations, or the sampled points, at most MAX_POINTS."""
    if sampling != "grid":
        if samples > MAX_POINTS:
            raise bad("sampling.points", f"{samples:,} points; at most {MAX_POINTS:,}")
        return
    total = 1
    for _, vals in parameters:
        total *= len(vals)
        if total > MAX_POINTS:
            raise bad("parameters", f"the grid has more than {MAX_POINTS:,} points; sample it "
                      "([sampling] method = \"latin-hypercube\", points = N) or use fewer values")
