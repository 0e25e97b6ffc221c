"""Interpret one linalg structured op over a box of its iteration space.

Named ops and `linalg.generic` are the same thing here: indexing maps,
iterator types and a body block of `arith`/`math` ops (MLIR's Python
bindings give named ops their implicit body too). Every operand becomes a
view of the tensor indexed by the loops (an `as_strided` window for
affine maps, so a conv's input window is not copied); the body is then
evaluated op by op on those views with numpy broadcasting.

Reductions keep linalg's sequential semantics. When a yielded value is
`out <op> f(inputs)` with an associative `<op>` and `out` used nowhere
else, f is evaluated over the box and reduced along the reduction loops
(and when f is a product of two inputs under `+`, as one `einsum` over
the indexing maps). Any other body steps through the reduction points
one by one, vectorized over the parallel loops.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import linalg
from numpy.lib.stride_tricks import as_strided

from ...run.dispatches.scalar_ops import HOST_FMA, NotInterpretable, evaluate, fma_f32

# Associative combiners: (numpy reduction ufunc, combine).
COMBINERS = {
    "arith.addf": np.add, "arith.addi": np.add, "arith.mulf": np.multiply, "arith.muli": np.multiply,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
    "arith.ori": np.bitwise_or, "arith.andi": np.bitwise_and, "arith.xori": np.bitwise_xor,
}
_CAST_OPS = {"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.sitofp",
             "arith.uitofp", "arith.trunci", "arith.fptosi", "arith.fptoui", "arith.bitcast"}
# Elements of a box evaluated at once before the reduction is split into chunks.
CHUNK_ELEMENTS = 1 << 23


@dataclass
class Structured:
    op: ir.Operation
    maps: list[ir.AffineMap]
    n_in: int
    reduction: tuple[bool, ...]
    ranges: tuple[int, ...]
    block: ir.Block
    # Body ops computed by other hardware than the op says (the output stage's rounding).
    overrides: dict = field(default_factory=dict)
    # Values the body reads from outside the op (a tensor it gathers from with tensor.extract).
    captures: dict = field(default_factory=dict)

    @property
    def n_loops(self) -> int:
        return len(self.ranges)


def structured(op: ir.Operation) -> Structured | None:
    """The op as a structured op, or None when it has no indexing maps."""
    if op.name == "linalg.softmax":  # identity maps; `run` computes it by its definition
        shape = tuple(op.operands[0].type.shape)
        axis = ir.IntegerAttr(op.attributes["dimension"]).value
        ident = ir.AffineMap.get_identity(len(shape), context=op.context)
        return Structured(op, [ident, ident], 1, tuple(d == axis for d in range(len(shape))),
                          shape, None)
    try:
        attr = linalg.get_indexing_maps(op)
    except Exception:
        return None
    if attr is None or not op.regions or not len(op.regions[0].blocks):
        return None
    maps = [ir.AffineMapAttr(a).value for a in attr]
    operands = list(op.operands)
    if "operandSegmentSizes" in op.attributes:
        n_out = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[-1]
    else:
        n_out = len(op.results)
    n_in = len(operands) - n_out
    n_loops = maps[0].n_dims
    if "iterator_types" in op.attributes:
        red = tuple("reduction" in str(a) for a in op.attributes["iterator_types"])
    else:
        in_out = {d for m in maps[n_in:] for e in m.results for d in _dims_of(e)}
        red = tuple(i not in in_out for i in range(n_loops))
    shapes = [tuple(v.type.shape) if isinstance(v.type, ir.ShapedType) else () for v in operands]
    return Structured(op, maps, n_in, red, _loop_ranges(maps, shapes, n_in, n_loops),
                      op.regions[0].blocks[0])


def _dims_of(e: ir.AffineExpr) -> set[int]:
    if isinstance(e, ir.AffineDimExpr):
        return {e.position}
    if isinstance(e, ir.AffineBinaryExpr):
        return _dims_of(e.lhs) | _dims_of(e.rhs)
    return set()


def linear(e: ir.AffineExpr) -> tuple[dict[int, int], int] | None:
    """`e` as ({loop: coefficient}, constant), None if not linear."""
    if isinstance(e, ir.AffineDimExpr):
        return {e.position: 1}, 0
    if isinstance(e, ir.AffineConstantExpr):
        return {}, e.value
    if isinstance(e, ir.AffineAddExpr):
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None:
            return None
        d = dict(a[0])
        for k, v in b[0].items():
            d[k] = d.get(k, 0) + v
        return d, a[1] + b[1]
    if isinstance(e, ir.AffineMulExpr):
        a, b = linear(e.lhs), linear(e.rhs)
        if a is None or b is None or (a[0] and b[0]):
            return None
        if not a[0]:
            a, b = b, a
        return {k: v * b[1] for k, v in a[0].items()}, a[1] * b[1]
    return None


def _loop_ranges(maps, shapes, n_in, n_loops) -> tuple[int, ...]:
    ranges: list[int | None] = [None] * n_loops
    order = list(range(n_in, len(maps))) + list(range(n_in))  # outputs are exact
    for i in order:
        for j, e in enumerate(maps[i].results):
            if isinstance(e, ir.AffineDimExpr) and ranges[e.position] is None and j < len(shapes[i]):
                ranges[e.position] = shapes[i][j]
    # Window loops appear only in `s*o + k`: their extent from the input's size.
    for i in range(n_in):
        for j, e in enumerate(maps[i].results):
            lin = linear(e)
            if lin is None or j >= len(shapes[i]):
                continue
            unknown = [d for d in lin[0] if ranges[d] is None]
            if len(unknown) != 1:
                continue
            d = unknown[0]
            span = sum(c * (ranges[k] - 1) for k, c in lin[0].items() if k != d and c > 0)
            ranges[d] = (shapes[i][j] - 1 - span - lin[1]) // lin[0][d] + 1
    if any(r is None or r < 0 for r in ranges):
        raise NotInterpretable("loop ranges not inferable")
    return tuple(ranges)


# ------------------------------------------------------------------ operand views


def _affine_values(e: ir.AffineExpr, grids: list[np.ndarray]) -> np.ndarray:
    if isinstance(e, ir.AffineDimExpr):
        return grids[e.position]
    if isinstance(e, ir.AffineConstantExpr):
        return np.asarray(e.value)
    a, b = _affine_values(e.lhs, grids), _affine_values(e.rhs, grids)
    if isinstance(e, ir.AffineAddExpr):
        return a + b
    if isinstance(e, ir.AffineMulExpr):
        return a * b
    if isinstance(e, ir.AffineModExpr):
        return np.mod(a, b)
    if isinstance(e, ir.AffineFloorDivExpr):
        return np.floor_divide(a, b)
    if isinstance(e, ir.AffineCeilDivExpr):
        return -np.floor_divide(-a, b)
    raise NotInterpretable(f"affine expression {e}")


def view(arr, amap: ir.AffineMap, offs, sizes) -> np.ndarray:
    """`arr` indexed by the loops over the box: ndim = loops, size 1 on loops it does not use."""
    arr = np.asarray(arr)
    n = len(sizes)
    if not len(amap.results):
        return arr.reshape((1,) * n)
    lins = [linear(e) for e in amap.results]
    if all(lin is not None and all(c > 0 for c in lin[0].values()) for lin in lins):
        base, strides, used = [], [0] * n, [False] * n
        for j, (coeffs, k) in enumerate(lins):
            lo = k + sum(c * offs[d] for d, c in coeffs.items())
            hi = lo + sum(c * (sizes[d] - 1) for d, c in coeffs.items())
            if lo < 0 or hi >= arr.shape[j]:
                raise NotInterpretable(f"access [{lo}, {hi}] outside dimension {j} of size {arr.shape[j]}")
            base.append(lo)
            for d, c in coeffs.items():
                strides[d] += c * arr.strides[j]
                used[d] = True
        sub = arr[tuple(slice(b, None) for b in base)]
        shape = tuple(sizes[d] if used[d] else 1 for d in range(n))
        return as_strided(sub, shape, tuple(strides), writeable=False)
    grids = [np.arange(o, o + s).reshape((1,) * d + (s,) + (1,) * (n - d - 1))
             for d, (o, s) in enumerate(zip(offs, sizes))]
    return arr[tuple(_affine_values(e, grids) for e in amap.results)]


def _out_dims(amap: ir.AffineMap) -> list[int]:
    dims = []
    for e in amap.results:
        if not isinstance(e, ir.AffineDimExpr):
            raise NotInterpretable(f"output indexing {amap} is not a projected permutation")
        dims.append(e.position)
    return dims


def out_region(out: np.ndarray, amap: ir.AffineMap, offs, sizes):
    """(writable region of `out` the box writes, its loop of each axis)."""
    dims = _out_dims(amap)
    # the Ellipsis keeps a rank-0 output a (writable) view: out[()] would be a copied scalar
    region = out[(..., *(slice(offs[d], offs[d] + sizes[d]) for d in dims))]
    return region, dims


def _to_loops(region: np.ndarray, dims: list[int], n: int) -> np.ndarray:
    order = sorted(range(len(dims)), key=lambda a: dims[a])
    t = region.transpose(order)
    present = sorted(dims)
    shape = [1] * n
    for a, d in enumerate(present):
        shape[d] = t.shape[a]
    return t.reshape(shape)


def _from_loops(value: np.ndarray, dims: list[int], sizes, n: int) -> np.ndarray:
    full = np.broadcast_to(value, tuple(sizes[d] if d in dims else 1 for d in range(n)))
    squeezed = full.reshape([sizes[d] for d in range(n) if d in dims])
    present = sorted(dims)
    return squeezed.transpose([present.index(d) for d in dims])


# ------------------------------------------------------------------ the body


class _Body:
    """Lazy evaluation of a body's values over one box."""

    def __init__(self, s: Structured, args: list, offs, sizes):
        self.s, self.offs, self.sizes = s, offs, sizes
        self.env = {a: v for a, v in zip(s.block.arguments, args)}

    def value(self, v: ir.Value):
        if v in self.env:
            return self.env[v]
        if v in self.s.captures:
            return self.s.captures[v]
        op = v.owner
        if isinstance(op, ir.Block):
            raise NotInterpretable("value defined outside the body")
        op = op.operation
        if op.name == "linalg.index":
            d = ir.IntegerAttr(op.attributes["dim"]).value
            n = len(self.sizes)
            out = np.arange(self.offs[d], self.offs[d] + self.sizes[d], dtype=np.int64)
            out = out.reshape((1,) * d + (self.sizes[d],) + (1,) * (n - d - 1))
        elif len(op.results) != 1:
            raise NotInterpretable(f"op {op.name} in a linalg body")
        elif op.name == "tensor.extract":  # a gather at computed indices (Resize)
            t = np.asarray(self.value(op.operands[0]))
            idx = [np.asarray(self.value(x), np.int64) for x in op.operands[1:]]
            out = t[tuple(np.broadcast_arrays(*idx))] if idx else t[()]
        elif op in self.s.overrides:
            out = self.s.overrides[op](*[self.value(x) for x in op.operands])
        elif HOST_FMA and op.name in ("arith.addf", "arith.subf") and _contracted(op) is not None:
            out = self._fma(op, _contracted(op))
        else:
            out = evaluate(op, [self.value(x) for x in op.operands])
        self.env[v] = out
        return out

    def _fma(self, op: ir.Operation, k: int):
        """addf/subf of the single-use mulf at operand k, as one FMA."""
        mul = op.operands[k].owner.operation
        x, y = (self.value(v) for v in mul.operands)
        z = self.value(op.operands[1 - k])
        if op.name == "arith.subf":  # m - z = fma(x, y, -z); z - m = fma(-x, y, z)
            x, z = (x, np.negative(z)) if k == 0 else (np.negative(x), z)
        return fma_f32(x, y, z)

    def yields(self) -> list[ir.Value]:
        term = list(self.s.block.operations)[-1].operation
        return list(term.operands)


def _contracted(op: ir.Operation) -> int | None:
    """The operand of an f32 addf/subf that is an f32 mulf with no other use (LLVM fuses those)."""
    if str(op.results[0].type) != "f32":
        return None
    for k, v in enumerate(op.operands):
        owner = v.owner
        if isinstance(v, ir.BlockArgument) or isinstance(owner, ir.Block):
            continue
        owner = owner.operation
        if owner.name == "arith.mulf" and owner.parent == op.parent and _one_use(v):
            return k
    return None


def _one_use(v: ir.Value) -> bool:
    uses = iter(v.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _depends(v: ir.Value, args: set, memo: dict) -> set:
    """Block arguments `v` is computed from."""
    if v in memo:
        return memo[v]
    if v in args:
        out = {v}
    else:
        op = v.owner
        out = set()
        if not isinstance(op, ir.Block):
            for x in op.operation.operands:
                out |= _depends(x, args, memo)
    memo[v] = out
    return out


@dataclass
class _Combiner:
    ufunc: np.ufunc
    partial: ir.Value  # f(inputs)
    factors: tuple[ir.Value, ir.Value] | None  # x, y when f = x * y under +, each from one input


def _combiners(s: Structured) -> list[_Combiner] | None:
    args = list(s.block.arguments)
    outs = args[s.n_in:]
    arg_set = set(args)
    memo: dict = {}
    term = list(s.block.operations)[-1].operation
    found = []
    for k, y in enumerate(term.operands):
        op = y.owner
        if isinstance(op, ir.Block) or op.operation.name not in COMBINERS:
            return None
        op = op.operation
        a, b = op.operands
        out = outs[k]
        if a == out:
            f = b
        elif b == out:
            f = a
        else:
            return None
        if len(list(out.uses)) != 1 or any(o in _depends(f, arg_set, memo) for o in outs):
            return None
        factors = None
        fop = f.owner
        if op.name in ("arith.addf", "arith.addi") and not isinstance(fop, ir.Block) \
                and fop.operation.name in ("arith.mulf", "arith.muli"):
            x, z = fop.operation.operands
            if all(len(_depends(t, arg_set, memo)) == 1 and _only_casts(t, arg_set) for t in (x, z)):
                factors = (x, z)
        found.append(_Combiner(COMBINERS[op.name], f, factors))
    return found


def _only_casts(v: ir.Value, args: set) -> bool:
    while v not in args:
        op = v.owner
        if isinstance(op, ir.Block) or op.operation.name not in _CAST_OPS:
            return False
        v = op.operation.operands[0]
    return True


# ------------------------------------------------------------------ running


def run(s: Structured, inputs: list, outputs: list[np.ndarray], offs=None, sizes=None) -> None:
    """Update `outputs` (arrays, in place) with the op computed over the box.

    The box is (offs, sizes) per loop; None means the whole iteration space.
    Reduction loops of the box accumulate into what `outputs` hold, so the
    tiles of one output block run in sequence, as linalg's semantics say.
    """
    n = s.n_loops
    offs = tuple(offs) if offs is not None else (0,) * n
    sizes = tuple(sizes) if sizes is not None else s.ranges
    if any(sz == 0 for sz in sizes):
        return
    if s.op.name == "linalg.softmax":
        _softmax(s, inputs[0], outputs[0], offs, sizes)
        return
    red = [d for d in range(n) if s.reduction[d]]
    regions = [out_region(o, s.maps[s.n_in + k], offs, sizes) for k, o in enumerate(outputs)]
    combiners = _combiners(s) if red else None
    if red and combiners is None:
        _run_sequential(s, inputs, regions, offs, sizes, red)
        return
    chunks = _reduction_chunks(sizes, red)
    for c_offs, c_sizes in ((tuple(o + c for o, c in zip(offs, co)), cs) for co, cs in chunks):
        ins = [view(a, s.maps[i], c_offs, c_sizes) for i, a in enumerate(inputs)]
        outs = [_to_loops(r, dims, n) for r, dims in regions]
        body = _Body(s, ins + outs, c_offs, c_sizes)
        if not red:
            values = [np.asarray(body.value(y)) for y in body.yields()]
            for (r, dims), v in zip(regions, values):
                r[...] = _from_loops(v, dims, c_sizes, n)
            continue
        for k, comb in enumerate(combiners):
            part = _reduce(body, comb, c_sizes, red, n)
            r, dims = regions[k]
            new = comb.ufunc(outs[k], part).astype(r.dtype, copy=False)
            r[...] = _from_loops(new, dims, c_sizes, n)


def _reduction_chunks(sizes, red):
    """Sub-boxes (relative offsets, sizes) splitting the largest reduction loop
    so no chunk evaluates more than CHUNK_ELEMENTS points."""
    total = math.prod(sizes)
    if not red or total <= CHUNK_ELEMENTS:
        return [((0,) * len(sizes), tuple(sizes))]
    d = max(red, key=lambda i: sizes[i])
    step = max(1, sizes[d] * CHUNK_ELEMENTS // total)
    out = []
    for start in range(0, sizes[d], step):
        o = [0] * len(sizes)
        sz = list(sizes)
        o[d], sz[d] = start, min(step, sizes[d] - start)
        out.append((tuple(o), tuple(sz)))
    return out


def _reduce(body: _Body, comb: _Combiner, sizes, red, n) -> np.ndarray:
    keep = [d for d in range(n) if d not in red]
    if comb.factors is not None:
        x, y = (np.asarray(body.value(f)) for f in comb.factors)
        letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        if n <= len(letters):
            def squeeze(a):
                a = np.broadcast_to(a, a.shape)  # keep views
                axes = [d for d in range(n) if a.shape[d] != 1]
                return a.reshape([a.shape[d] for d in axes]), "".join(letters[d] for d in axes)
            (xa, xs), (ya, ys) = squeeze(x), squeeze(y)
            outs = [d for d in keep if letters[d] in xs + ys]
            dtype = np.result_type(xa, ya)
            r = np.einsum(f"{xs},{ys}->{''.join(letters[d] for d in outs)}", xa, ya,
                          optimize=True, dtype=dtype)
            return np.asarray(r).reshape([sizes[d] if d in outs else 1 for d in range(n)])
    f = np.asarray(body.value(comb.partial))
    f = np.broadcast_to(f, tuple(sizes[d] if d in red else f.shape[d] for d in range(n)))
    return comb.ufunc.reduce(f, axis=tuple(red), keepdims=True)


def _run_sequential(s: Structured, inputs, regions, offs, sizes, red) -> None:
    n = s.n_loops
    acc = [_to_loops(r, dims, n).copy() for r, dims in regions]
    for point in itertools.product(*[range(sizes[d]) for d in red]):
        p_offs, p_sizes = list(offs), list(sizes)
        for d, p in zip(red, point):
            p_offs[d], p_sizes[d] = offs[d] + p, 1
        ins = [view(a, s.maps[i], p_offs, p_sizes) for i, a in enumerate(inputs)]
        body = _Body(s, ins + acc, p_offs, p_sizes)
        acc = [np.asarray(body.value(y)).astype(acc[k].dtype, copy=False) for k, y in enumerate(body.yields())]
    for (r, dims), a in zip(regions, acc):
        r[...] = _from_loops(a, dims, sizes, n)


def _softmax(s: Structured, x, out: np.ndarray, offs, sizes) -> None:
    """exp(x - max) / sum(exp(x - max)) along the axis, over whole rows of the box."""
    axis = s.reduction.index(True)
    if offs[axis] != 0 or sizes[axis] != s.ranges[axis]:
        raise NotInterpretable("a softmax tile must hold whole rows")
    box = tuple(slice(o, o + z) for o, z in zip(offs, sizes))
    v = np.asarray(x)[box].astype(np.float64)
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    out[box] = (e / e.sum(axis=axis, keepdims=True)).astype(out.dtype)


def fresh_outputs(out_operands: list) -> list[np.ndarray]:
    """Copies of the outs operands (tensors are values: the op writes a new one)."""
    return [np.array(o, copy=True) for o in out_operands]
