"""What a dispatch's root op touches: its loops and tensor accesses.

Reads the indexing maps of the root linalg op (and of the elementwise
ops fused after it) and traces each operand back to the DRAM buffer it
is loaded from, giving a `TilingProblem` plus, per access, where its
data lives. Op classification itself comes from `ir/linalg`.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import linalg

from ...ir.flow_graph import tensor_shape_dtype
from ...ir.linalg import OpDescription, dtype_nbytes
from ...ir.linalg.affine import affine_terms
from .tiling import Access, Loop

PASS_THROUGH = {"iree_tensor_ext.dispatch.tensor.load", "flow.dispatch.tie_shape"}
NO_DATA = {"tensor.empty", "linalg.fill"}


@dataclass(frozen=True)
class Source:
    kind: str  # "arg" (func argument), "const" (constant in the dispatch), "none", "internal"
    index: int = -1  # func argument number, or constant number


@dataclass(frozen=True)
class BoundAccess:
    access: Access
    source: Source
    dtype: str
    shape: tuple[int, ...]


def trace(value: ir.Value, consts: list[ir.Operation], depth: int = 0) -> Source:
    """Where a tensor inside a dispatch function comes from."""
    if isinstance(value, ir.BlockArgument):
        return Source("arg", value.arg_number)
    op = value.owner
    if isinstance(op, ir.Block):
        return Source("none")
    op = op.operation
    if op.name in PASS_THROUGH:
        return trace(op.operands[0], consts, depth + 1)
    if op.name in NO_DATA:
        return Source("none")
    if op.name == "arith.constant":
        for i, c in enumerate(consts):
            if c == op:
                return Source("const", i)
        consts.append(op)
        return Source("const", len(consts) - 1)
    if op.name.startswith("linalg.") or depth > 8:
        return Source("internal")
    for v in op.operands:
        if tensor_shape_dtype(v.type) is not None:
            return trace(v, consts, depth + 1)
    return Source("none")


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    if op.name == "linalg.softmax":  # elementwise in and out over the same loops
        rank = len(ir.ShapedType(op.operands[0].type).shape)
        return [ir.AffineMap.get_identity(rank, context=op.context)] * len(op.operands)
    try:
        attr = linalg.get_indexing_maps(op)
    except Exception:
        return None
    if attr is None:
        return None
    return [ir.AffineMapAttr(a).value for a in attr]


def _dims_of(amap: ir.AffineMap, shape, remap=None):
    dims = []
    for expr, size in zip(amap.results, shape):
        terms = affine_terms(expr)  # a window's constant offset does not change its extent
        if terms is None or (remap is not None and any(k not in remap for k, _ in terms)):
            dims.append((None, size))
            continue
        merged: dict[int, int] = {}
        for k, c in terms:
            merged[k] = merged.get(k, 0) + c
        coeffs = tuple(sorted(((remap[k] if remap else k), c) for k, c in merged.items() if c))
        dims.append((coeffs, size))
    return tuple(dims)


def _operand_info(v: ir.Value):
    sd = tensor_shape_dtype(v.type)
    if sd is None:
        return (), "f32"
    return tuple(d if d is not None else 1 for d in sd[0]), sd[1]


def loops_of(desc: OpDescription) -> tuple[Loop, ...]:
    names = [n or f"d{i}" for i, n in enumerate(desc.loop_dims)]
    return tuple(
        Loop(names[i], r if r is not None else -1, t == "reduction")
        for i, (r, t) in enumerate(zip(desc.loop_ranges, desc.iterator_types))
    )


def accesses(root: ir.Operation, fused: list[ir.Operation],
             consts: list[ir.Operation]) -> list[BoundAccess] | None:
    """Accesses of the root op and of external inputs of fused ops, or
    None when the root op has no indexing maps (e.g. linalg.softmax)."""
    maps = _maps(root)
    if maps is None:
        return None
    n_in = len(root.operands) - len(root.results)
    out: list[BoundAccess] = []
    for i, (v, amap) in enumerate(zip(root.operands, maps)):
        shape, dtype = _operand_info(v)
        if not shape and i < n_in:
            continue  # scalar input (fill value): lives in a register
        src = trace(v, consts)
        role = "output" if i >= n_in else "input"
        # A MAC op's output type is its accumulator (f32 for f16 inputs): that
        # is what its SRAM tile holds.
        nbytes = dtype_nbytes(dtype)
        out.append(BoundAccess(Access(f"op{i}", role, nbytes, _dims_of(amap, shape)),
                               src, dtype, shape))
    # Root output map as pure dims: output dim j is root loop out_loops[j].
    out_map = maps[-1]
    out_loops = [e.position if isinstance(e, ir.AffineDimExpr) else None for e in out_map.results]
    for k, f in enumerate(fused):
        fmaps = _maps(f)
        f_in = len(f.operands) - len(f.results)
        for i, v in enumerate(list(f.operands)[:f_in]):
            src = trace(v, consts)
            if src.kind in ("internal", "none"):
                continue
            shape, dtype = _operand_info(v)
            if not shape:
                continue
            remap = None
            if fmaps is not None and len(fmaps[i].results) == len(shape) \
                    and fmaps[-1].n_dims == len(out_loops) and None not in out_loops:
                remap = {j: out_loops[j] for j in range(len(out_loops))}
            dims = _dims_of(fmaps[i], shape, remap) if remap else tuple((None, s) for s in shape)
            out.append(BoundAccess(Access(f"f{k}.{i}", "input", dtype_nbytes(dtype), dims),
                                   src, dtype, shape))
    # A tensor a body gathers from at computed indices (tensor.extract, e.g.
    # Resize) is read whole: every tile may touch any element of it.
    for j, v in enumerate(_gathered(root, fused)):
        shape, dtype = _operand_info(v)
        out.append(BoundAccess(Access(f"g{j}", "input", dtype_nbytes(dtype), tuple((None, d) for d in shape)),
                               trace(v, consts), dtype, shape))
    return out


def _gathered(root: ir.Operation, fused: list[ir.Operation]) -> list[ir.Value]:
    """Tensors defined outside the ops that their bodies read with tensor.extract."""
    found: list[ir.Value] = []
    for op in [root, *fused]:
        if not op.regions or not op.regions[0].blocks:
            continue
        block = op.regions[0].blocks[0]
        for inner in block.operations:
            inner = inner.operation
            if inner.name != "tensor.extract":
                continue
            t = inner.operands[0]
            inside = not isinstance(t, ir.BlockArgument) and not isinstance(t.owner, ir.Block) \
                and t.owner.operation.parent == op
            if not inside and isinstance(t.type, ir.ShapedType) and all(t != f for f in found):
                found.append(t)
    return found
