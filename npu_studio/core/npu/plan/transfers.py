"""Data-movement dispatches as DMA transfers.

A dispatch that only moves data -- IREE's `slow_memcpy` dispatches (a
tensor load stored into a region of a larger tensor: the body of a pad,
concatenation or slice), and dispatches whose root op the dispatch index
classifies as `copy/transpose` or as a broadcast (an `other` op that only
yields its input) -- is one DMA transfer from DRAM to DRAM:

  strided  the source or destination region is not one contiguous run
           (a transpose, a slice, a store into part of a larger tensor,
           a broadcast read with stride 0);
  padded   the destination was filled with a splat value on the host
           (`flow.tensor.splat`) just for this transfer: a padded DMA
           writes that value around the data, so nothing else touches it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iree.compiler import ir

from ...ir.flow_graph import DispatchSite, FlowGraph
from ...ir.linalg import OpDescription, dtype_nbytes

_LOAD = "iree_tensor_ext.dispatch.tensor.load"
_STORE = "iree_tensor_ext.dispatch.tensor.store"
# Ops a pure data-movement body may hold besides loads and stores.
_MOVE_OK = frozenset({_LOAD, _STORE, "func.return", "arith.constant", "tensor.empty",
                      "flow.dispatch.tie_shape"})
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-zA-Z]\w*)>")


@dataclass(frozen=True)
class Transfer:
    kind: str  # copy | transpose | broadcast | insert | pad
    bytes_read: int
    bytes_written: int
    strided: bool
    padded: bool
    pad_value: str = ""  # the splat value written around the data ("" when not padded)


def _shape_dtype(t: ir.Type) -> tuple[tuple[int, ...], str] | None:
    m = _TENSOR.search(str(t))  # dynamic dims ("?x") do not match
    if m is None:
        return None
    dims = tuple(int(x) for x in m.group(1).split("x") if x)
    return dims, m.group(2)


def _static(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _body_ops(func: ir.Operation) -> list[ir.Operation]:
    out: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    out.append(inner.operation)
                    walk(inner.operation)

    walk(func)
    return out


def _splat_value(graph: FlowGraph, site: DispatchSite) -> str | None:
    """The splat value of the dispatch's tied (read-write) destination, if
    the host made it with flow.tensor.splat."""
    op = site.op
    if "tied_operands" not in op.attributes:
        return None
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    args = list(op.operands)[seg[0]:seg[0] + seg[1]]
    for t in ir.ArrayAttr(op.attributes["tied_operands"]):
        k = ir.IntegerAttr(t).value
        if k < 0 or k >= len(args):
            continue
        owner = args[k].owner
        if isinstance(owner, ir.Block) or owner.name != "flow.tensor.splat":
            continue
        const = owner.operands[0].owner
        if isinstance(const, ir.Block) or "value" not in const.attributes:
            return "?"
        attr = const.attributes["value"]
        try:
            return repr(ir.FloatAttr(attr).value)
        except (TypeError, ValueError):
            return str(ir.IntegerAttr(attr).value)
    return None


def memcpy_transfer(graph: FlowGraph, site: DispatchSite, func: ir.Operation) -> Transfer | None:
    """A dispatch body of tensor loads and stores only, as one transfer."""
    ops = _body_ops(func)
    if not ops or any(o.name not in _MOVE_OK for o in ops):
        return None
    loads = [o for o in ops if o.name == _LOAD]
    stores = [o for o in ops if o.name == _STORE]
    if not stores:
        return None
    read = written = 0
    strided = False
    for o in loads + stores:
        src = o.operands[0] if o.name == _LOAD else o.operands[1]
        full = _shape_dtype(src.type)
        if full is None or any(d < 0 for d in _static(o, "static_sizes")):
            return None
        shape, dtype = full
        sizes = _static(o, "static_sizes")
        n = math.prod(sizes) * dtype_nbytes(dtype)
        if o.name == _LOAD:
            read += n
        else:
            written += n
        if list(sizes) != list(shape) or any(s != 1 for s in _static(o, "static_strides")):
            strided = True
    pad = _splat_value(graph, site)
    if pad is not None:
        # A padded transfer writes the whole destination: data and border.
        dst = [_shape_dtype(o.operands[1].type) for o in stores]
        written = sum(math.prod(s) * dtype_nbytes(d) for s, d in dst if s is not None)
        return Transfer("pad", read, written, strided, True, pad)
    return Transfer("insert" if strided else "copy", read, written, strided, False)


def op_transfer(desc: OpDescription, maps: list[ir.AffineMap] | None) -> Transfer | None:
    """A copy, transpose or broadcast root op (with its indexing maps) as one transfer."""
    if desc.bytes_read is None or desc.bytes_written is None:
        return None
    if desc.kind == "copy/transpose":
        ident = maps is not None and all(m == ir.AffineMap.get_identity(m.n_dims, m.context) for m in maps)
        return Transfer("copy" if ident else "transpose", desc.bytes_read, desc.bytes_written,
                        not ident, False)
    if desc.kind == "other" and desc.flops == 0 and not desc.body_ops:
        return Transfer("broadcast", desc.bytes_read, desc.bytes_written, True, False)
    return None
