"""What `arith` and `math` ops compute, on numpy arrays.

Each op is evaluated elementwise on (broadcast) arrays, so one table serves
the bodies of `linalg.generic` and named ops alike. Signless MLIR
integers are held as signed numpy integers; ops that read them unsigned
(divui, cmpi ult, ...) view them as unsigned first.
"""

from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir

from ...dtypes import numpy_value_dtype


class NotInterpretable(Exception):
    """An op the interpreter has no semantics for (the dispatch goes to IREE's CPU build)."""


# The element types the interpreter computes in (a dispatch in any other goes to IREE's CPU build).
_INTERPRETED = frozenset({"i1", "i8", "i16", "i32", "i64", "index", "f16", "bf16", "f32", "f64"})


def numpy_dtype(t: ir.Type | str) -> np.dtype:
    """numpy dtype of an MLIR element type (core/dtypes.py: index is int64, bf16 is ml_dtypes')."""
    name = str(t)
    if name not in _INTERPRETED:
        raise NotInterpretable(f"element type {name}")
    return numpy_value_dtype(name)


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.ndim else x.astype(np.dtype(f"u{x.dtype.itemsize}"))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """math.round: ties away from zero (trunc(x + 0.5) would round 0.49999997 up)."""
    x = np.asarray(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype, copy=False)


def fma_f32(a, b, c) -> np.ndarray:
    """a * b + c in f32 rounded once, as an FMA instruction computes it.

    The f64 product is exact, so the f64 sum is rounded once; rounding it
    to f32 then gives the FMA's result unless the f64 sum landed exactly
    on an f32 midpoint (the one case of a wrong double rounding). Only
    those elements (and f32-subnormal sums) take the exact path.
    """
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    s = p + np.asarray(c, np.float64)
    r = np.asarray(s.astype(np.float32))
    with np.errstate(invalid="ignore"):
        suspect = ((s.view(np.int64) & _BELOW_F32) == _F32_HALF) | ((np.abs(s) < _F32_NORMAL) & (s != 0))
    if suspect.any():
        a, b, c = (np.broadcast_to(np.asarray(v, np.float32), s.shape) for v in (a, b, c))
        r = np.array(r, copy=True)
        r[suspect] = _fma_f32_exact(a[suspect], b[suspect], c[suspect])
    return r


_BELOW_F32 = (1 << 29) - 1  # the f64 mantissa bits an f32 (normal) drops
_F32_HALF = 1 << 28  # ... exactly half an f32 unit: a midpoint
_F32_NORMAL = 2.0 ** -125  # below, f32 has fewer bits: the exact path


def _fma_f32_exact(a, b, c) -> np.ndarray:
    """fma_f32 for any element: TwoSum gives the f64 sum's error, which decides
    the midpoint cases."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c64 = np.asarray(c, np.float64)
    s = p + c64
    bv = s - p
    err = (p - (s - bv)) + (c64 - bv)
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    diff = s - r64
    with np.errstate(invalid="ignore", over="ignore"):
        toward = np.nextafter(r, np.where(diff > 0, np.float32(np.inf), np.float32(-np.inf))).astype(np.float32)
        midpoint = (diff != 0) & (2 * diff == toward.astype(np.float64) - r64)
    beyond = midpoint & (err != 0) & (np.sign(err) == np.sign(diff))
    return np.where(beyond, toward, r).astype(np.float32)


def _host_has_fma() -> bool:
    """Does IREE's CPU build (`--iree-llvmcpu-target-cpu=host`) contract a * b + c into an FMA?"""
    import platform

    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and " fma" in line for line in f)
    except OSError:
        return False


# LLVM fuses an f32 multiply whose only use is an add or subtract into an FMA
# on such a CPU (IREE builds with fast FP-op fusion): the interpreter does too.
HOST_FMA = _host_has_fma()


# How a requantization stage rounds (output_stage.ROUNDING_MODES), on numpy arrays.
ROUNDERS = {"half-even": np.rint, "half-away": round_half_away, "truncate": np.trunc}


def _erf(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.asarray(x).dtype)


_CMPF = {
    0: lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
    1: lambda a, b: a == b, 2: lambda a, b: a > b, 3: lambda a, b: a >= b,
    4: lambda a, b: a < b, 5: lambda a, b: a <= b,
    6: lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
    7: lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    9: lambda a, b: ~(a <= b), 10: lambda a, b: ~(a < b), 11: lambda a, b: ~(a >= b),
    12: lambda a, b: ~(a > b), 13: lambda a, b: a != b,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
    15: lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
}
_CMPI = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
    4: lambda a, b: a > b, 5: lambda a, b: a >= b,
    6: lambda a, b: _unsigned(a) < _unsigned(b), 7: lambda a, b: _unsigned(a) <= _unsigned(b),
    8: lambda a, b: _unsigned(a) > _unsigned(b), 9: lambda a, b: _unsigned(a) >= _unsigned(b),
}

# Ops whose result is f(operands) with no attributes to read.
_PLAIN = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.remf": np.fmod, "arith.negf": np.negative,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
    "arith.shli": np.left_shift, "arith.shrsi": np.right_shift,
    "arith.divsi": lambda a, b: (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b)),
    "arith.remsi": np.fmod,
    "arith.floordivsi": np.floor_divide,
    "arith.ceildivsi": lambda a, b: -np.floor_divide(-a, b),
    "arith.select": lambda c, a, b: np.where(c, a, b),
    "math.exp": np.exp, "math.exp2": np.exp2, "math.expm1": np.expm1,
    "math.log": np.log, "math.log2": np.log2, "math.log10": np.log10, "math.log1p": np.log1p,
    "math.tanh": np.tanh, "math.sinh": np.sinh, "math.cosh": np.cosh,
    "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
    "math.asin": np.arcsin, "math.acos": np.arccos, "math.atan": np.arctan, "math.atan2": np.arctan2,
    "math.sqrt": np.sqrt, "math.rsqrt": lambda x: (1 / np.sqrt(x)).astype(np.asarray(x).dtype),
    "math.cbrt": np.cbrt, "math.absf": np.abs, "math.absi": np.abs,
    "math.floor": np.floor, "math.ceil": np.ceil, "math.trunc": np.trunc,
    "math.round": lambda x: round_half_away(x),
    "math.roundeven": np.rint, "math.powf": np.power, "math.copysign": np.copysign,
    "math.fma": lambda a, b, c: a * b + c, "math.erf": _erf,
    "math.isnan": np.isnan, "math.isinf": np.isinf, "math.isfinite": np.isfinite,
}

_UNSIGNED = {
    "arith.divui": np.floor_divide, "arith.remui": np.remainder,
    "arith.maxui": np.maximum, "arith.minui": np.minimum, "arith.shrui": np.right_shift,
}

_CASTS = {"arith.extf", "arith.truncf", "arith.extsi", "arith.trunci", "arith.sitofp",
          "arith.fptosi", "arith.index_cast", "arith.fptoui"}


def constant_value(op: ir.Operation):
    """The value of an `arith.constant` (a numpy scalar or array)."""
    attr = op.attributes["value"]
    t = op.results[0].type
    if isinstance(t, ir.ShapedType):
        dtype = numpy_dtype(t.element_type)
        if isinstance(attr, ir.DenseElementsAttr):
            dense = ir.DenseElementsAttr(attr)
            if dense.is_splat:
                return np.full(tuple(t.shape), scalar_value(dense.get_splat_value(), t.element_type), dtype)
            if dtype == np.bool_:
                return np.array(dense, dtype=np.bool_).reshape(t.shape)
            return np.array(dense, copy=True).astype(dtype, copy=False).reshape(t.shape)
        raise NotInterpretable(f"constant {str(attr)[:60]}")
    return scalar_value(attr, t)


def scalar_value(attr: ir.Attribute, t: ir.Type):
    dtype = numpy_dtype(t)
    if isinstance(attr, ir.FloatAttr):
        return dtype.type(ir.FloatAttr(attr).value)
    if isinstance(attr, ir.IntegerAttr):
        v = ir.IntegerAttr(attr).value
        if dtype == np.bool_:
            return np.bool_(v & 1)
        return np.array(v).astype(dtype)[()]
    raise NotInterpretable(f"scalar constant {attr}")


def evaluate(op: ir.Operation, args: list):
    """Result of a scalar-semantics op on arrays `args` (one value)."""
    name = op.name
    rtype = op.results[0].type
    if name in _PLAIN:
        out = _PLAIN[name](*args)
    elif name in _UNSIGNED:
        out = np.asarray(_UNSIGNED[name](*[_unsigned(a) for a in args])).astype(np.asarray(args[0]).dtype)
    elif name == "arith.cmpf":
        out = _CMPF[ir.IntegerAttr(op.attributes["predicate"]).value](*args)
    elif name == "arith.cmpi":
        out = _CMPI[ir.IntegerAttr(op.attributes["predicate"]).value](*args)
    elif name in _CASTS:
        return np.asarray(args[0]).astype(numpy_dtype(rtype))
    elif name in ("arith.extui", "arith.uitofp", "arith.index_castui"):
        return _unsigned(args[0]).astype(numpy_dtype(rtype))
    elif name == "arith.bitcast":
        return np.asarray(args[0]).view(numpy_dtype(rtype))
    elif name == "math.fpowi":
        out = np.power(args[0], np.asarray(args[1]).astype(np.asarray(args[0]).dtype))
    elif name == "arith.constant":
        return constant_value(op)
    else:
        raise NotInterpretable(f"op {name}")
    # numpy may widen (e.g. f16 * python float); keep MLIR's result type
    return np.asarray(out).astype(numpy_dtype(rtype), copy=False)


def known(name: str) -> bool:
    return (name in _PLAIN or name in _UNSIGNED or name in _CASTS or name in
            ("arith.cmpf", "arith.cmpi", "arith.extui", "arith.uitofp", "arith.index_castui",
             "arith.bitcast", "math.fpowi", "arith.constant"))
