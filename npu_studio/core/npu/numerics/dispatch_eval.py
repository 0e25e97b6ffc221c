"""Interpret one dispatch function of a `flow` module on numpy arrays.

The function's bindings (`!iree_tensor_ext.dispatch.tensor` arguments)
are arrays: loads slice them, stores write into them. Its ops are taken in
order: tensor ops (empty, slices, reshapes, pad), constants, scalar
`arith`/`math` ops and linalg structured ops (`linalg_eval`). The root op
-- the one the NPU pipeline tiled -- runs tile by tile in the order of the
dispatch's tasks; the other ops run whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from iree.compiler import ir

from ...ir.dispatch_index.labels import choose_root
from ...ir.linalg import describe_linalg_op
from ...ir.linalg.requant import ROUND_OP_MODE
from ...run.dispatches.scalar_ops import ROUNDERS, NotInterpretable, constant_value, evaluate, known, numpy_dtype
from ..target.output_stage import OutputStage, split_epilogue
from . import linalg_eval, ordered_sum

# (task position within the dispatch, output regions of the tile) -> None; may modify the regions.
TileHook = Callable[[int, list[np.ndarray]], None]


@dataclass(frozen=True)
class Tile:
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]


def root_op(func: ir.Operation) -> ir.Operation | None:
    """The op the NPU pipeline tiles: the dispatch index's root (`choose_root`)."""
    pairs = []
    for op in _walk(func):
        if not op.name.startswith("linalg.") or op.name in ("linalg.yield", "linalg.index"):
            continue
        d = describe_linalg_op(op)
        if d is not None:
            pairs.append((op, d))
    root = choose_root([d for _, d in pairs])
    return next((op for op, d in pairs if d is root), None)


def _walk(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                yield inner
                if not inner.name.startswith("linalg."):
                    yield from _walk(inner)


def static_values(op: ir.Operation, name: str, dynamic: list) -> list[int]:
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    dyn = iter(dynamic)
    kdynamic = -(1 << 63)
    return [int(next(dyn)) if v == kdynamic else v for v in values]


def slice_params(op: ir.Operation, first_dynamic: int, env: dict):
    """Offsets, sizes and strides of a load/store/extract/insert."""
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    pos = sum(seg[:first_dynamic])
    # The segments after the tensor operands: [offsets, sizes, strides]; the
    # store/load ops may have a source_dims/target_dims segment first.
    groups = seg[first_dynamic:]
    offs_n, sizes_n, strides_n = groups[-3], groups[-2], groups[-1]
    pos += sum(groups[:-3])
    dyn_offs = [env[v] for v in operands[pos:pos + offs_n]]
    dyn_sizes = [env[v] for v in operands[pos + offs_n:pos + offs_n + sizes_n]]
    dyn_strides = [env[v] for v in operands[pos + offs_n + sizes_n:pos + offs_n + sizes_n + strides_n]]
    return (static_values(op, "static_offsets", dyn_offs), static_values(op, "static_sizes", dyn_sizes),
            static_values(op, "static_strides", dyn_strides))


def _slices(offs, sizes, strides):
    # led by an Ellipsis: a rank-0 tensor indexes to a view (a plain () would copy it out as a scalar)
    return (..., *(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(offs, sizes, strides)))


def _shape(v: ir.Value) -> tuple[int, ...]:
    return tuple(v.type.shape) if isinstance(v.type, ir.ShapedType) else ()


class DispatchInterpreter:
    """Runs one dispatch function; `tiles` gives the root op's tiles in task order."""

    def __init__(self, func: ir.Operation, tiles: list[Tile] | None = None, on_tile: TileHook | None = None,
                 stage: OutputStage | None = None, stage_rounding: str | None = None, reductions: list | None = None):
        self.func = func
        # IREE's lowering configs of the reducing ops (cpu_reductions): float sums follow their order.
        self.reductions = reductions
        self._orders: dict = {}
        self.notes: list[str] = []
        self.tiles = tiles
        self.on_tile = on_tile
        # The MAC array's output stage computes the requantization of the epilogue
        # (output_stage.split_epilogue), rounding as it does: `stage_rounding`
        # overrides the stage's mode (a deliberately wrong model, for tests).
        self.stage = stage if stage is not None and stage.present else None
        self.stage_rounding = stage_rounding
        self.root = root_op(func) if tiles is not None else None
        if tiles is not None and self.root is None:
            raise NotInterpretable("no root op to tile")
        self._epilogue: list = []
        self._done: dict = {}

    def root_ranges(self) -> tuple[int, ...]:
        s = linalg_eval.structured(self.root)
        if s is None:
            raise NotInterpretable(f"root op {self.root.name} has no indexing maps")
        return s.ranges

    def run(self, bindings: list) -> None:
        block = self.func.regions[0].blocks[0]
        env: dict = dict(zip(block.arguments, bindings))
        ops = [op.operation for op in block.operations]
        self._epilogue = epilogue(ops, self.root) if self.tiles is not None else []
        self._orders = self._float_orders(ops)
        if self.stage is not None and self._epilogue:
            self._model_output_stage()
        self._done: dict = {}  # epilogue op -> its outputs, computed tile by tile with the root
        for op in ops:
            if op.name in ("func.return", "return"):
                return
            self._op(op, env)

    def _float_orders(self, ops: list[ir.Operation]) -> dict:
        """Float sum -> the order IREE's CPU build sums it in (its reducing ops pair with ours in order)."""
        if self.reductions is None:
            return {}
        reducing = [(op, s) for op in ops if op.name.startswith("linalg.")
                    for s in [linalg_eval.structured(op)] if s is not None and any(s.reduction)]
        if len(reducing) != len(self.reductions):
            if any(ordered_sum.is_float_sum(s) for _, s in reducing):
                self.notes.append(f"IREE's CPU build has {len(self.reductions)} reducing ops here, the dispatch "
                                  f"{len(reducing)}: float sums in numpy's order, not IREE's")
            return {}
        orders = {}
        for (op, s), config in zip(reducing, self.reductions):
            order = ordered_sum.float_order(s, config)
            if order is not None:
                orders[op] = order
        return orders

    def _model_output_stage(self) -> None:
        split = split_epilogue([e_op for e_op, _ in self._epilogue], self.stage)
        rounder = ROUNDERS[self.stage_rounding or self.stage.rounding]
        overrides = {op: rounder for op in split.stage_ops if op.name in ROUND_OP_MODE}
        overrides.update({op: _saturating(op) for op in split.stage_ops if op.name in _NARROWING})
        for _, e_s in self._epilogue:
            e_s.overrides = overrides

    def _op(self, op: ir.Operation, env: dict) -> None:
        name = op.name
        args = [env.get(v) for v in op.operands]
        if name == "iree_tensor_ext.dispatch.tensor.load":
            offs, sizes, strides = slice_params(op, 1, env)
            out = np.asarray(args[0])[_slices(offs, sizes, strides)]
            env[op.results[0]] = np.array(out, copy=True).reshape(_shape(op.results[0]))
        elif name == "iree_tensor_ext.dispatch.tensor.store":
            offs, sizes, strides = slice_params(op, 2, env)
            target = args[1]
            region = target[_slices(offs, sizes, strides)]
            region[...] = np.asarray(args[0]).reshape(region.shape)
        elif name == "tensor.empty":
            r = op.results[0]
            env[r] = np.zeros(_shape(r), numpy_dtype(r.type.element_type))
        elif name == "arith.constant":
            env[op.results[0]] = constant_value(op)
        elif name in ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape",
                      "flow.dispatch.tie_shape", "iree_tensor_ext.dispatch.tensor.tie_shape"):
            env[op.results[0]] = np.asarray(args[0]).reshape(_shape(op.results[0]))
        elif name == "tensor.cast":
            env[op.results[0]] = args[0]
        elif name == "tensor.extract_slice":
            offs, sizes, strides = slice_params(op, 1, env)
            env[op.results[0]] = np.array(np.asarray(args[0])[_slices(offs, sizes, strides)]).reshape(
                _shape(op.results[0]))
        elif name == "tensor.insert_slice":
            offs, sizes, strides = slice_params(op, 2, env)
            dest = np.array(args[1], copy=True)
            region = dest[_slices(offs, sizes, strides)]
            region[...] = np.asarray(args[0]).reshape(region.shape)
            env[op.results[0]] = dest
        elif name == "tensor.extract":
            env[op.results[0]] = np.asarray(args[0])[tuple(int(i) for i in args[1:])]
        elif name == "tensor.pad":
            env[op.results[0]] = self._pad(op, args, env)
        elif name == "linalg.softmax":
            env[op.results[0]] = _softmax(np.asarray(args[0]), ir.IntegerAttr(op.attributes["dimension"]).value)
        elif name.startswith("linalg."):
            outs = self._done.pop(op, None)
            if outs is None:
                outs = self._linalg(op, args, env)
            for r, v in zip(op.results, outs):
                env[r] = v
        elif known(name) and len(op.results) == 1:
            env[op.results[0]] = evaluate(op, args)
        else:
            raise NotInterpretable(f"op {name}")

    def _pad(self, op, args, env):
        low = static_values(op, "static_low", [env[v] for v in list(op.operands)[1:]])
        result_shape = _shape(op.results[0])
        body = op.regions[0].blocks[0]
        term = list(body.operations)[-1].operation
        v = term.operands[0]
        if isinstance(v.owner, ir.Block) or v in list(body.arguments):
            pad_value = env.get(v)
            if pad_value is None:
                raise NotInterpretable("tensor.pad with an index-dependent value")
        else:
            pad_value = constant_value(v.owner.operation) if v.owner.operation.name == "arith.constant" \
                else env.get(v)
        src = np.asarray(args[0])
        out = np.full(result_shape, pad_value, src.dtype)
        out[tuple(slice(lo, lo + s) for lo, s in zip(low, src.shape))] = src
        return out

    def _linalg(self, op: ir.Operation, args: list, env: dict) -> list:
        s = linalg_eval.structured(op)
        if s is None:
            raise NotInterpretable(f"op {op.name} (no indexing maps)")
        s.captures = env
        ins, outs = args[:s.n_in], linalg_eval.fresh_outputs(args[s.n_in:])
        order = self._orders.get(op)

        def compute(offs=None, sizes=None):
            if order is not None:
                ordered_sum.run(s, order, ins, outs, offs, sizes)
            else:
                linalg_eval.run(s, ins, outs, offs, sizes)
        if self.tiles is None or self.root is None or op != self.root:
            compute()
            return outs
        # The epilogue's tensors: the root's results as they fill, the others from env.
        arrays = dict(zip(op.results, outs))
        steps = []
        for e_op, e_s in self._epilogue:
            e_args = [arrays.get(v, env.get(v)) for v in e_op.operands]
            e_outs = linalg_eval.fresh_outputs(e_args[e_s.n_in:])
            e_s.captures = env
            arrays.update(zip(e_op.results, e_outs))
            steps.append((e_s, e_args[:e_s.n_in], e_outs))
            self._done[e_op] = e_outs
        out_loops = _out_loops(s)
        red = [d for d in range(s.n_loops) if s.reduction[d]]
        if order is not None and not self._tiles_follow(order, red):
            self.notes.append("the NPU's tiles split the float sum otherwise than IREE's CPU build orders it: "
                              "its last bits may differ")
        for k, tile in enumerate(self.tiles):
            compute(tile.offsets, tile.sizes)
            if self.on_tile is not None:
                regions = [linalg_eval.out_region(o, s.maps[s.n_in + j], tile.offsets, tile.sizes)[0]
                           for j, o in enumerate(outs)]
                self.on_tile(k, regions)
            if steps and all(tile.offsets[d] + tile.sizes[d] >= s.ranges[d] for d in red):
                # the output tile is final: the fused elementwise ops run on it
                offs = [tile.offsets[d] for d in out_loops]
                sizes = [tile.sizes[d] for d in out_loops]
                for e_s, e_ins, e_outs in steps:
                    linalg_eval.run(e_s, e_ins, e_outs, offs, sizes)
        return outs


    def _tiles_follow(self, order, red: list[int]) -> bool:
        """Do the tiles of each output block visit the reduction in IREE's order?"""
        blocks: dict = {}
        for tile in self.tiles:
            key = tuple((o, z) for d, (o, z) in enumerate(zip(tile.offsets, tile.sizes)) if d not in red)
            blocks.setdefault(key, []).append((tuple(tile.offsets[d] for d in red), tuple(tile.sizes[d] for d in red)))
        return all(ordered_sum.compatible(order, boxes) for boxes in blocks.values())


_NARROWING = ("arith.fptosi", "arith.fptoui")


def _saturating(op: ir.Operation):
    """The stage's narrowing: saturate to the type's range, then convert (a clamp before it
    makes this what fptosi computes)."""
    dtype = numpy_dtype(op.results[0].type)
    if op.name == "arith.fptoui":
        dtype = np.dtype(f"u{dtype.itemsize}")
    info = np.iinfo(dtype)
    out_dtype = numpy_dtype(op.results[0].type)

    def narrow(x):
        return np.clip(np.asarray(x), info.min, info.max).astype(dtype).astype(out_dtype, copy=False)
    return narrow


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """linalg.softmax as MLIR decomposes it: exp(x - max) / sum(exp(x - max)), in x's type."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def _out_loops(s: linalg_eval.Structured) -> list[int]:
    return [e.position for e in s.maps[-1].results]


def _is_identity(m: ir.AffineMap, n: int) -> bool:
    return len(m.results) == n and all(
        isinstance(e, ir.AffineDimExpr) and e.position == j for j, e in enumerate(m.results))


def epilogue(ops: list[ir.Operation], root: ir.Operation | None) -> list:
    """Elementwise linalg ops after `root` that can run on each finished output tile.

    Each must be all-parallel over the root result's shape with identity
    output maps, read the root's (or an earlier epilogue op's) result through
    an identity map, and take its other operands from before the root.
    """
    if root is None:
        return []
    pos = {op: i for i, op in enumerate(ops)}
    r = pos.get(root)
    rs = linalg_eval.structured(root)
    if r is None or rs is None or len(root.results) != 1:
        return []
    out = rs.maps[-1]
    if not all(isinstance(e, ir.AffineDimExpr) for e in out.results):
        return []
    rank = len(out.results)
    produced = {root.results[0]}
    chain = []
    for op in ops[r + 1:]:
        if not op.name.startswith("linalg.") or len(op.results) != 1:
            continue
        s = linalg_eval.structured(op)
        if s is None or any(s.reduction) or s.n_loops != rank or tuple(s.ranges) != tuple(
                rs.ranges[d] for d in _out_loops(rs)):
            continue
        if not all(_is_identity(m, rank) for m in s.maps[s.n_in:]):
            continue
        reads = [i for i, v in enumerate(op.operands) if v in produced]
        if not reads or any(i >= s.n_in or not _is_identity(s.maps[i], rank) for i in reads):
            continue
        others = [v for v in op.operands if v not in produced]
        if all(_before(v, pos, r) for v in others):
            chain.append((op, s))
            produced.add(op.results[0])
    return chain


def _before(v: ir.Value, pos: dict, r: int) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return True
    return pos.get(owner.operation, r) < r
