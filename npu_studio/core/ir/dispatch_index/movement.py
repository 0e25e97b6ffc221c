"""What a dispatch without a linalg op does: it moves data (IREE's `slow_memcpy` dispatches).

Its body is tensor loads stored elsewhere. From the shapes of what is loaded and stored against the
whole tensors they come from and go to:

  copy    whole tensors copied
  slice   part of a tensor read (a slice, a split)
  insert  stored into part of a larger tensor (a concatenation's piece)
  pad     the same, into a tensor filled with one value (named from the call site, in indexing.py)

The NPU pipeline maps these as DMA transfers (core/npu/plan/transfers.py); this only names them, with
their shapes and element types, for the index, the table and the detail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..linalg import TensorInfo

LOAD = "iree_tensor_ext.dispatch.tensor.load"
STORE = "iree_tensor_ext.dispatch.tensor.store"
_TENSOR = re.compile(r"tensor<((?:[\d?]+x)*)([a-zA-Z]\w*)>")


@dataclass(frozen=True)
class DataMovement:
    kind: str  # copy | slice | insert | pad
    inputs: tuple[TensorInfo, ...]  # what is loaded
    outputs: tuple[TensorInfo, ...]  # the tensors stored into (whole)

    @property
    def bytes_moved(self) -> int | None:
        sizes = [t.nbytes for t in self.inputs]
        return None if any(s is None for s in sizes) else sum(sizes)

    def to_json(self) -> dict:
        return {"kind": self.kind, "inputs": [_tensor_json(t) for t in self.inputs],
                "outputs": [_tensor_json(t) for t in self.outputs], "bytes": self.bytes_moved}


def _tensor_json(t: TensorInfo) -> dict:
    return {"shape": list(t.shape), "dtype": t.dtype}


def _tensor(type_text: str) -> TensorInfo | None:
    m = _TENSOR.search(type_text)
    if m is None:
        return None
    dims = [d for d in m.group(1).split("x") if d]
    return TensorInfo(tuple(None if d == "?" else int(d) for d in dims), m.group(2))


def describe_movement(ops) -> DataMovement | None:
    """The movement of a body's load and store ops (MLIR operations), or None if it has neither."""
    loaded, whole_in, stored, whole_out = [], [], [], []
    for op in ops:
        if op.name == LOAD:
            part, whole = _tensor(str(op.results[0].type)), _tensor(str(op.operands[0].type))
            if part is not None and whole is not None:
                loaded.append(part)
                whole_in.append(whole)
        elif op.name == STORE:
            part, whole = _tensor(str(op.operands[0].type)), _tensor(str(op.operands[1].type))
            if part is not None and whole is not None:
                stored.append(part)
                whole_out.append(whole)
    if not loaded or not stored:
        return None
    if any(p.shape != w.shape for p, w in zip(stored, whole_out)):
        kind = "insert"
    elif any(p.shape != w.shape for p, w in zip(loaded, whole_in)):
        kind = "slice"
    else:
        kind = "copy"
    return DataMovement(kind, tuple(loaded), tuple(whole_out))
