"""How far one result may lie from its reference: the one tolerance rule and the error measures.

The rule (docs/model-debugging.md, "Tolerance"): a result agrees when
max |result - reference| <= T * max(1, scale) + A, scale being the
reference's largest finite magnitude. T comes from the arithmetic, not from
the result's element type: the loosest float type among the element types
the dispatch computes in (every linalg op's operands and results, its
accumulators among them) and the types of the result and of everything
the compared value went through (a comparison with onnxruntime carries the
error of every dispatch upstream; a comparison of one dispatch on the same
inputs only its own). An integer result is exact (A = 0), or one step
(A = 1) when floats are rounded to it (a quantize, a requantization); a
float result dequantized from integers so rounded is one step of its scale
(A = the DequantizeLinear's scale).
The NPU check (`simulate --check`, `run --npu`), the numerics trace,
precision and the substitution gate all take their default from here.

Errors are reported against the scale too (max |result - reference| /
scale), never per element: a per-element relative error at a near-zero
element says nothing about the result. `worst_elements` says where the
largest errors sit, and `flat_reference` when a comparison cannot tell
anything because the reference is (nearly) constant.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lazy_import import lazy_module

np = lazy_module("numpy")

# Relative tolerance (of the reference's largest magnitude) per output element type.
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
DEFAULT_TOLERANCE = 1e-4
WORST_COUNT = 5  # worst elements a report lists
FILL_GAP = 1e3  # a value this many times all the data is a fill (scale_of)


# MLIR element types as numpy names.
MLIR_TYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def tolerance_of(dtype) -> float:
    """The tolerance of a numpy dtype (or its name); integers and booleans get the f32 one."""
    return TOLERANCE.get(np.dtype(dtype).name if not isinstance(dtype, str) else dtype, DEFAULT_TOLERANCE)


def _type_name(t) -> str:
    if isinstance(t, str):
        return MLIR_TYPES.get(t, t)
    try:
        return np.dtype(t).name
    except TypeError:
        return str(t)


@dataclass(frozen=True)
class Tolerance:
    """The rule's answer for one comparison: relative T, absolute A, and the type T comes from."""

    relative: float
    absolute: float = 0.0
    computed_in: str = "float32"

    def bound(self, scale: float) -> float:
        return self.relative * max(1.0, scale) + self.absolute

    def text(self) -> str:
        if self.relative == 0 and self.absolute == 0:
            return f"exact ({self.computed_in})"
        if self.relative == 0:
            return f"{self.absolute:g} step ({self.computed_in})"
        return f"{self.relative:g} ({self.computed_in})"


def arithmetic_tolerance(types, result_dtype, step: float | None = None) -> Tolerance:
    """The rule for a result of `result_dtype` computed through element `types` (MLIR or numpy names);
    `step`: the result is dequantized with this scale (a float result one rounding to integers
    upstream may put one step apart)."""
    names = {_type_name(t) for t in types} | {_type_name(result_dtype)}
    floats = [n for n in names if n in TOLERANCE]
    loosest = max(floats, key=TOLERANCE.__getitem__) if floats else None
    result = _type_name(result_dtype)
    if not _is_integer(result):
        relative = TOLERANCE.get(loosest, DEFAULT_TOLERANCE)
        if step and any(_is_integer(n) for n in names):
            return Tolerance(relative, step, f"{loosest or result}, dequantized: one step")
        return Tolerance(relative, 0.0, loosest or result)
    if loosest is not None:  # floats rounded to integers: one step either way at a rounding boundary
        return Tolerance(0.0, 1.0, f"{result} rounded from {loosest}")
    return Tolerance(0.0, 0.0, result)


def _is_integer(name: str) -> bool:
    try:
        return np.dtype(name).kind in "iub"
    except TypeError:
        return False


def dispatch_types(rec) -> set[str]:
    """The element types a dispatch record computes in: every linalg op's operands and results, and
    the float types its body's ops compute in (an f16 multiply between f32 operands)."""
    if rec is None:
        return set()
    ops = list(rec.ops) or ([rec.root] if rec.root is not None else [])
    return {t.dtype for op in ops for t in (*op.inputs, *op.outputs) if t.dtype} | \
        {t for op in ops for t in getattr(op, "body_types", ())}


def upstream_types(records) -> dict[int, set[str]]:
    """Dispatch index -> the types it and every dispatch feeding it (transitively) compute in."""
    out: dict[int, set[str]] = {}
    for rec in sorted(records, key=lambda r: r.index):
        types = set(dispatch_types(rec))
        for p in rec.producers:
            types |= out.get(p, set())
        out[rec.index] = types
    return out


def abs_errors(result, reference) -> np.ndarray:
    """|result - reference| per element in float64; values that agree (equal infinities, NaN
    against NaN) count 0, a NaN against anything else counts inf."""
    a = np.asarray(result, np.float64)
    b = np.asarray(reference, np.float64).reshape(a.shape)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):  # inf - inf where both agree is masked out
        diff = np.where(same, 0.0, np.abs(a - b))
    return np.where(np.isnan(diff), np.inf, diff)


def scale_of(reference) -> float:
    """The yardstick of errors: the largest finite |reference| among its data (0 when there is none).

    Values more than FILL_GAP times larger than all the data (and than 1) are fills, not data: a
    causal mask's -1e9, a padding's -FLT_MAX, scores with such a mask added. Their own rounding
    is as large as they are, so they are judged against their own magnitude (`weighted_errors`),
    and they do not set the bound of the data (with -1e9 as the scale, an error of 8 in the scores
    agreed, and the fault was blamed on the softmax after them).
    """
    b = np.asarray(reference, np.float64)
    finite = np.abs(b[np.isfinite(b)])
    if not finite.size:
        return 0.0
    largest = float(finite.max())
    if largest <= FILL_GAP or np.asarray(reference).dtype.kind != "f":  # no fill possible; integers have none
        return largest
    magnitudes = np.unique(finite)  # sorted
    jumps = np.flatnonzero(magnitudes[1:] > FILL_GAP * np.maximum(1.0, magnitudes[:-1]))
    return float(magnitudes[jumps[0]]) if jumps.size else largest  # the data end below the first such jump


def weighted_errors(result, reference, scale: float | None = None) -> np.ndarray:
    """|result - reference| per element, a fill's (`scale_of`) brought to the data's scale: the
    rule's T * max(1, scale) bounds it as T * |its own value|. Without fills: `abs_errors`."""
    diff = abs_errors(result, reference)
    scale = scale_of(reference) if scale is None else scale
    b = np.abs(np.asarray(reference, np.float64).reshape(diff.shape))
    floor = max(1.0, scale)
    own = np.where(np.isfinite(b), np.maximum(b, floor), floor)
    return diff if not (own > floor).any() else diff * (floor / own)


def relative_to_scale(error: float, scale: float) -> float:
    """`error` as a fraction of the reference's scale (inf for an error against an all-zero reference)."""
    if scale > 0:
        return error / scale
    return 0.0 if error == 0 else float("inf")


def max_error(a, b) -> tuple[float, float]:
    """(max |a - b| over elements that differ, the scale of b); agreeing infinities count as equal,
    a fill's error (`scale_of`) counts relative to its own magnitude."""
    a = np.asarray(a, np.float64)
    if not a.size:
        return 0.0, 0.0
    scale = scale_of(b)
    return float(weighted_errors(a, b, scale).max()), scale


def worst_elements(result, reference, count: int = WORST_COUNT) -> list[tuple[tuple[int, ...], float, float, float]]:
    """The `count` elements with the largest error, largest first, as (index, reference, result,
    error); elements that agree are left out."""
    diff = weighted_errors(result, reference)  # ranked as the rule judges them, reported as they are
    k = min(count, int(np.count_nonzero(diff)))
    if k == 0:
        return []
    flat = diff.ravel()
    top = np.argpartition(flat, -k)[-k:]
    a = np.asarray(result, np.float64).reshape(diff.shape)
    b = np.asarray(reference, np.float64).reshape(diff.shape)
    worst = []
    for i in top[np.argsort(-flat[top], kind="stable")]:
        idx = tuple(int(x) for x in np.unravel_index(int(i), diff.shape))
        worst.append((idx, float(b[idx]), float(a[idx]), float(abs_errors(a[idx], b[idx]))))
    return worst


def value_text(value: float) -> str:
    """A value as a person reads it: 0.0, 0.001, 3.5e+38, inf."""
    text = f"{value:.7g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def element_text(value: float, dtype: str) -> str:
    """An element's value with as many digits as its own type needs to tell it from its neighbours."""
    try:
        kind = np.dtype(dtype)
    except TypeError:  # a type numpy does not name (bfloat16 without ml_dtypes)
        kind = None
    if kind is not None and (np.issubdtype(kind, np.integer) or kind == np.bool_) and np.isfinite(value):
        return str(int(value))
    if kind is None or not np.issubdtype(kind, np.floating):  # bfloat16 and other ml_dtypes floats
        return f"{value:.9g}"
    x = kind.type(value)
    if value == 0 or 1e-4 <= abs(value) < 1e7 or not np.isfinite(value):
        return np.format_float_positional(x, unique=True, trim="-")
    return np.format_float_scientific(x, unique=True, trim="-")


def flat_reference(reference, bound) -> str | None:
    """Why a comparison with `reference` cannot tell a right result from a wrong one, or None.

    It cannot when the reference is empty, has no finite value, or is so flat that one constant
    output would agree with every element: |c - reference| <= `bound` (a number, or one per
    element) for c midway between its smallest and largest value. An exactly constant reference
    is named as such ("constant (all 0.0)"). A single element is flat only when it is zero (an
    output left at zero would pass); any other single value is a real check.
    """
    b = np.asarray(reference, np.float64)
    if b.size == 0:
        return "is empty"
    finite = np.isfinite(b)
    if not finite.any():
        return "has no finite value"
    if not finite.all():
        return None  # no constant agrees with finite and non-finite elements at once
    lo, hi = float(b.min()), float(b.max())
    if b.size == 1:
        return "is a single 0.0" if lo == 0 else None
    if lo == hi:
        return f"is constant (all {value_text(lo)})"
    mid = lo + (hi - lo) / 2
    if np.all(np.abs(b - mid) <= bound):
        return (f"is nearly constant (from {value_text(lo)} to {value_text(hi)}): "
                f"a constant output would pass")
    return None
