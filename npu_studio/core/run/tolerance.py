"""How far one result may lie from its reference: per-type tolerances and the error measure.

An element type's tolerance is relative to the reference's largest finite
magnitude (its scale), with 1 as the smallest scale: a result agrees when
max |result - reference| <= tolerance * max(1, scale). Shared by the NPU
check (NPU against IREE) and the numerics trace (IREE against onnxruntime).
"""

from __future__ import annotations

import numpy as np

# Relative tolerance (of the reference's largest magnitude) per output element type.
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
DEFAULT_TOLERANCE = 1e-4


def tolerance_of(dtype) -> float:
    """The tolerance of a numpy dtype (or its name); integers and booleans get the f32 one."""
    return TOLERANCE.get(np.dtype(dtype).name if not isinstance(dtype, str) else dtype, DEFAULT_TOLERANCE)


def max_error(a, b) -> tuple[float, float]:
    """(max |a - b| over elements that differ, max finite |b|); agreeing infinities count as equal."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64).reshape(a.shape)
    if not a.size:
        return 0.0, 0.0
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):  # inf - inf where both agree is masked out
        diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(b[np.isfinite(b)])
    return float(diff.max()), float(finite.max()) if finite.size else 0.0
