"""Linalg ops without indexing maps (aggregates), described by their semantics."""

from __future__ import annotations

from ...lazy_import import lazy_module

from .types import OpDescription, tensor_info

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

# linalg.softmax decomposes into max, sub, exp, sum and div per element.
SOFTMAX_BODY_OPS = ("arith.maximumf", "arith.subf", "math.exp", "arith.addf", "arith.divf")


def describe_softmax(operation: ir.Operation) -> OpDescription:
    """A softmax over its `dimension`: that loop reduces, the others are parallel."""
    x = tensor_info(operation.operands[0].type)
    y = tensor_info(operation.operands[-1].type)
    axis = ir.IntegerAttr(operation.attributes["dimension"]).value
    iterators = tuple("reduction" if i == axis else "parallel" for i in range(len(x.shape)))
    n = x.num_elements
    return OpDescription(
        op_name=operation.name,
        kind="softmax",
        dims={"axis": axis},
        strides=(),
        dilations=(),
        groups=None,
        loop_ranges=x.shape,
        iterator_types=iterators,
        loop_dims=tuple("R" if i == axis else f"d{i}" for i in range(len(x.shape))),
        inputs=(x,),
        outputs=(y,),
        flops=None if n is None else n * len(SOFTMAX_BODY_OPS),
        bytes_read=x.nbytes,
        bytes_written=y.nbytes,
        body_ops=SOFTMAX_BODY_OPS,
    )
