"""The value types of the op description: kinds, operands, the description itself."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...lazy_import import lazy_module

from ... import dtypes

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

KINDS: tuple[str, ...] = (
    "conv",
    "depthwise_conv",
    "matmul",
    "batch_matmul",
    "pooling",
    "reduction",
    "elementwise",
    "gather",  # a parallel op whose result is read at computed indices (tensor.extract): Gather, nearest Resize
    "softmax",
    "copy/transpose",
    "other",
)


@dataclass(frozen=True)
class TensorInfo:
    """Shape (None for a dynamic '?') and element type of one operand."""

    shape: tuple[int | None, ...]
    dtype: str

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int | None:
        n = self.num_elements
        if n is None:
            return None
        return n * dtype_nbytes(self.dtype)


@dataclass(frozen=True)
class OpDescription:
    op_name: str
    kind: str
    dims: dict[str, int | None]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int | None
    loop_ranges: tuple[int | None, ...]
    iterator_types: tuple[str, ...]
    loop_dims: tuple[str, ...]
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    flops: int | None
    bytes_read: int | None
    bytes_written: int | None
    # Arithmetic ops in the body, e.g. ("arith.mulf", "arith.addf"); used
    # for labels such as "relu" or "bias add" of fused ops.
    body_ops: tuple[str, ...] = field(default=(), compare=False)
    # Float element types the body's ops compute in (run/tolerance: the arithmetic's precision).
    body_types: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_static(self) -> bool:
        return all(r is not None for r in self.loop_ranges) and all(
            t.is_static for t in self.inputs + self.outputs
        )

    @property
    def dtype(self) -> str:
        """Element type of the first data input (of the output if none); a gather's is its result's
        (its inputs are the indices: the data it reads is no operand)."""
        if self.kind == "gather" and self.outputs:
            return self.outputs[0].dtype
        for t in self.inputs:
            if t.shape:
                return t.dtype
        return self.outputs[0].dtype if self.outputs else ""


def dtype_nbytes(dtype: str) -> int:
    """Storage bytes of one element (the one table: core/dtypes.py)."""
    return dtypes.nbytes(dtype)


def tensor_info(t: ir.Type) -> TensorInfo:
    if isinstance(t, ir.ShapedType):
        if not t.has_rank:
            return TensorInfo((None,), str(t.element_type))
        shape = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
        return TensorInfo(shape, str(t.element_type))
    return TensorInfo((), str(t))
