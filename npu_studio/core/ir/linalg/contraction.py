"""Matmuls and batch matmuls, by MLIR's contraction interface."""

from __future__ import annotations

from ...lazy_import import lazy_module

from .affine import prod_or_none
from .structured_op import StructuredOp

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start


def classify_contraction(op: StructuredOp, opview: ir.OpView):
    from iree.compiler.dialects import linalg  # loaded by describe_linalg_op already

    cd = linalg.infer_contraction_dimensions(opview)
    if cd is None:
        return None
    b, m, n, k = list(cd.batch), list(cd.m), list(cd.n), list(cd.k)
    r = op.ranges
    dims: dict[str, int | None] = {}
    if b:
        dims["B"] = prod_or_none(r[d] for d in b)
    dims["M"] = prod_or_none(r[d] for d in m) if m else 1
    dims["N"] = prod_or_none(r[d] for d in n) if n else 1
    dims["K"] = prod_or_none(r[d] for d in k) if k else 1
    names = [""] * op.n_loops
    for label, loops in (("B", b), ("M", m), ("N", n), ("K", k)):
        for d in loops:
            names[d] = label
    return ("batch_matmul" if b else "matmul"), dims, tuple(names)
