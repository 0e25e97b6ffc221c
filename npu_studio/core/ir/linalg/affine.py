"""Affine-expression helpers: indexing maps as sums of `loop * coefficient` terms."""

from __future__ import annotations

import math

from ...lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start


def affine_terms(expr: ir.AffineExpr) -> list[tuple[int, int]] | None:
    """`expr` as a list of (loop, coefficient), ignoring constant offsets.

    None for anything that is not a sum of `dN * const` terms.
    """
    if isinstance(expr, ir.AffineDimExpr):
        return [(expr.position, 1)]
    if isinstance(expr, ir.AffineConstantExpr):
        return []
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = affine_terms(expr.lhs), affine_terms(expr.rhs)
        if lhs is None or rhs is None:
            return None
        return lhs + rhs
    if isinstance(expr, ir.AffineMulExpr):
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(b, ir.AffineConstantExpr):
                inner = affine_terms(a)
                if inner is None:
                    return None
                return [(d, c * b.value) for d, c in inner]
        return None
    return None


def pure_dim(expr: ir.AffineExpr) -> int | None:
    return expr.position if isinstance(expr, ir.AffineDimExpr) else None


def sum_or_none(values) -> int | None:
    values = list(values)
    if any(v is None for v in values):
        return None
    return sum(values)


def prod_or_none(values) -> int | None:
    values = list(values)
    if any(v is None for v in values):
        return None
    return math.prod(values)


def pure_positions(m: ir.AffineMap) -> dict[int, int]:
    """loop -> result position, for results that are a plain loop."""
    out: dict[int, int] = {}
    for j, e in enumerate(m.results):
        d = pure_dim(e)
        if d is not None and d not in out:
            out[d] = j
    return out
