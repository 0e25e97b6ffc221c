"""Float reductions summed in the order IREE's CPU build sums them.

`linalg_eval` reduces a float sum with numpy (einsum, pairwise sums): a
few last bits off IREE's result, which is fine against a tolerance but
not where the sum is requantized and must match bit for bit. Here the
reduction points are visited in the order of IREE's lowering config
(`run.dispatches.cpu_reductions`): its reduction tiles outermost in loop
order, each tile in loop order, every step rounding into the running f32
value, the product fused into an FMA unless IREE's vector contraction
becomes a dot (`FloatOrder.fma`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from iree.compiler import ir

from ...run.dispatches.cpu_reductions import ReductionConfig
from ...run.dispatches.scalar_ops import HOST_FMA
from . import linalg_eval
from .linalg_eval import Structured, _Body, _dims_of, _from_loops, _to_loops, out_region, view


@dataclass(frozen=True)
class FloatOrder:
    tiles: tuple[int, ...]  # IREE's tile of each reduction loop of the op (in loop order)
    fma: bool  # the accumulating add fused with the product under it


def _float(s: Structured) -> bool:
    outs = list(s.op.results)
    return bool(outs) and all(isinstance(r.type, ir.ShapedType) and str(r.type.element_type)
                              == "f32" for r in outs)


def _accumulate(s: Structured):
    """(the addf that accumulates, the mulf under it or None), for a one-output sum."""
    if s.block is None or len(s.op.results) != 1:
        return None
    term = list(s.block.operations)[-1].operation
    y = term.operands[0]
    owner = y.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.addf":
        return None
    add = owner.operation
    out = list(s.block.arguments)[s.n_in]
    others = [v for v in add.operands if v != out]
    if len(others) != 1:
        return None
    f = others[0].owner
    mul = None if isinstance(f, ir.Block) or f.operation.name != "arith.mulf" else f.operation
    return add, mul


def _loops_of(s: Structured, v, memo: dict) -> set[int]:
    """Loops a body value depends on through the op's inputs; a constant counts as all of them
    (IREE's vectorizer broadcasts it to the whole vector)."""
    args = list(s.block.arguments)
    deps = linalg_eval._depends(v, set(args), memo)
    if not deps:
        return set(range(s.n_loops))
    loops: set[int] = set()
    for a in deps:
        i = args.index(a)
        for e in s.maps[i].results:
            loops |= _dims_of(e)
    return loops


def is_float_sum(s: Structured) -> bool:
    return any(s.reduction) and _accumulate(s) is not None and _float(s)


def float_order(s: Structured, config: ReductionConfig) -> FloatOrder | None:
    """How IREE's CPU build sums this op, from its lowering config; None when the
    config does not describe this op (another loop structure) or it is no float sum."""
    red = [d for d in range(s.n_loops) if s.reduction[d]]
    par = [d for d in range(s.n_loops) if not s.reduction[d]]
    acc = _accumulate(s)
    if not red or acc is None or not _float(s):
        return None
    r_tiles, p_tiles = config.reduction_tiles(), config.parallel_tiles()
    # IREE may add leading unit loops (a batch for a batchless conv): they carry no tile.
    if len(r_tiles) != len(red) or len(p_tiles) < len(par):
        return None
    p_tiles = p_tiles[len(p_tiles) - len(par):]
    tiles = tuple(min(t, s.ranges[d]) if t > 0 else s.ranges[d] for t, d in zip(r_tiles, red))
    _, mul = acc
    fma = HOST_FMA
    if mul is not None and fma:
        memo: dict = {}
        x, y = (_loops_of(s, v, memo) for v in mul.operands)
        vector = [d for d, t in zip(par, p_tiles) if min(t, s.ranges[d]) > 1]
        if config.pipeline == "ConvTileAndDecomposeExpert":
            # the decomposed conv unrolls an output loop its input steps through with a stride
            vector = [d for d in vector if d not in _strided(s)]
        outer = any((d in x) != (d in y) for d in vector)
        # A contraction with no outer-product form over a vector of reduction points
        # lowers to a product and a horizontal add (vector.reduction): no FMA.
        fma = outer or all(t == 1 for t in tiles)
    return FloatOrder(tiles, fma)


def _strided(s: Structured) -> set[int]:
    """Loops an input reads with a stride above 1 (`2*oh + kh`)."""
    out: set[int] = set()
    for m in s.maps[:s.n_in]:
        for e in m.results:
            lin = linalg_eval.linear(e)
            if lin is not None:
                out |= {d for d, c in lin[0].items() if c > 1}
    return out


def _key(point, red, tiles):
    return tuple(p // t for p, t in zip(point, tiles)) + tuple(point)


def compatible(order: FloatOrder, boxes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> bool:
    """Do reduction boxes (offsets, sizes of the reduction loops) taken one after the
    other visit the points in IREE's order? (Each box is walked in that order.)"""
    n = len(order.tiles)
    red = list(range(n))
    last = None
    for offs, sizes in boxes:
        lo = _key(offs, red, order.tiles)
        hi = _key(tuple(o + z - 1 for o, z in zip(offs, sizes)), red, order.tiles)
        if last is not None and not last < lo:
            return False
        last = hi
    return True


def run(s: Structured, order: FloatOrder, inputs: list, outputs: list[np.ndarray], offs=None, sizes=None) -> None:
    """`linalg_eval.run` for a float sum, visiting the box's reduction points in `order`."""
    n = s.n_loops
    offs = tuple(offs) if offs is not None else (0,) * n
    sizes = tuple(sizes) if sizes is not None else s.ranges
    if any(z == 0 for z in sizes):
        return
    red = [d for d in range(n) if s.reduction[d]]
    points = sorted(itertools.product(*[range(offs[d], offs[d] + sizes[d]) for d in red]),
                    key=lambda p: _key(p, red, order.tiles))
    regions = [out_region(o, s.maps[s.n_in + k], offs, sizes) for k, o in enumerate(outputs)]
    add, _ = _accumulate(s)
    overrides = dict(s.overrides)
    if not order.fma:  # the product is rounded, then added
        overrides[add] = lambda a, b: np.add(a, b, dtype=np.result_type(a, b))
    saved, s.overrides = s.overrides, overrides
    try:
        acc = [_to_loops(r, dims, n).copy() for r, dims in regions]
        p_offs, p_sizes = list(offs), list(sizes)
        for d in red:
            p_sizes[d] = 1
        for point in points:
            for d, p in zip(red, point):
                p_offs[d] = p
            ins = [view(a, s.maps[i], p_offs, p_sizes) for i, a in enumerate(inputs)]
            body = _Body(s, ins + acc, p_offs, p_sizes)
            acc = [np.asarray(body.value(y)).astype(acc[k].dtype, copy=False) for k, y in enumerate(body.yields())]
    finally:
        s.overrides = saved
    for (r, dims), a in zip(regions, acc):
        r[...] = _from_loops(a, dims, sizes, n)
