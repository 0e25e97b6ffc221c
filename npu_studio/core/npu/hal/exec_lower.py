"""A dispatch's flow function as an `ExecDispatch` (exec_desc) for the plugin's C interpreter.

The function is read as the Python functional model reads it
(`numerics/dispatch_eval`): the same root op (`root_op`), the same fused
epilogue (`epilogue`), the same loops and maps (`linalg_eval.structured`),
the output stage's rounding and narrowing where the functional simulator
models them (`split_epilogue`, for MAC dispatches). What the C interpreter
cannot run raises `Unsupported` with the construct, and the dispatch is
described by its reason alone.
"""

from __future__ import annotations

import base64

import numpy as np
from iree.compiler import ir

from ...ir.linalg.requant import ROUND_OP_MODE
from ...run.dispatches.scalar_ops import NotInterpretable, constant_value
from ..program.npu_ir import NpuProgram
from ..numerics import linalg_eval
from ..numerics.dispatch_eval import epilogue, root_op, slice_params, static_values
from ..target.output_stage import split_epilogue
from .exec_desc import ELEMENTS, MAX_LOOPS, MAX_RANK, BodyOp, ExecDispatch, FuncOp, Value, check

LOADS = "iree_tensor_ext.dispatch.tensor.load"
STORES = "iree_tensor_ext.dispatch.tensor.store"
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape", "tensor.cast",
            "flow.dispatch.tie_shape", "iree_tensor_ext.dispatch.tensor.tie_shape")
# arith/math ops the C interpreter computes (plugin_src/npu_exec_body.c), by MLIR name.
BODY_OPS = frozenset(
    [f"arith.{n}" for n in (
        "addf subf mulf divf remf negf maximumf minimumf maxnumf minnumf addi subi muli divsi divui remsi "
        "remui andi ori xori maxsi minsi maxui minui shli shrsi shrui floordivsi ceildivsi select cmpf cmpi "
        "extf truncf extsi extui trunci sitofp uitofp fptosi fptoui index_cast index_castui").split()]
    + [f"math.{n}" for n in (
        "exp exp2 expm1 log log2 log10 log1p tanh sinh cosh sin cos tan asin acos atan atan2 sqrt rsqrt cbrt "
        "absf absi floor ceil trunc round roundeven powf copysign fma erf fpowi").split()])
_NARROWING = ("arith.fptosi", "arith.fptoui")


class Unsupported(Exception):
    """A construct the C interpreter has no semantics for; the message names it."""


def describe(func: ir.Operation, program: NpuProgram, dispatch: int) -> ExecDispatch:
    """Dispatch #`dispatch`'s function (a flow dispatch function) described for the C interpreter."""
    info = program.dispatches[dispatch]
    try:
        return _Lowering(func, program, dispatch).run()
    except (Unsupported, NotInterpretable) as exc:
        return ExecDispatch(dispatch, info.symbol, " ".join(str(exc).split()) or "unsupported", 0)


def _element(t: ir.Type) -> str:
    name = str(t)
    if name not in ELEMENTS:
        raise Unsupported(f"element type {name}")
    return name


def _value_of(t: ir.Type) -> Value:
    text = str(t)
    if "dispatch.tensor<" in text:  # a binding: its tensor type
        t = ir.Type.parse(text.split("dispatch.tensor<", 1)[1][:-1].partition(":")[2])
    if isinstance(t, ir.ShapedType):
        if not t.has_static_shape:
            raise Unsupported(f"dynamic shape {t}")
        if t.rank > MAX_RANK:
            raise Unsupported(f"rank {t.rank} over {MAX_RANK}")
        return Value(_element(t.element_type), tuple(t.shape))
    return Value(_element(t), ())


class _Lowering:
    def __init__(self, func: ir.Operation, program: NpuProgram, dispatch: int):
        self.func, self.program, self.dispatch = func, program, dispatch
        self.info = program.dispatches[dispatch]
        self.ids: dict = {}
        self.values: list[Value] = []
        self.overrides: dict = {}  # body op -> ("round", mode) | ("saturate",)

    def _id(self, v: ir.Value) -> int:
        if v not in self.ids:
            raise Unsupported("a value defined outside the dispatch function")
        return self.ids[v]

    def _define(self, v: ir.Value) -> int:
        self.ids[v] = len(self.values)
        self.values.append(_value_of(v.type))
        return self.ids[v]

    def run(self) -> ExecDispatch:
        block = self.func.regions[0].blocks[0]
        for a in block.arguments:
            self._define(a)
        n_bindings = len(self.values)
        ops = [op.operation for op in block.operations]
        tiled = self.info.unit != "dma"  # as the functional model: a DMA transfer is one task
        root = root_op(self.func) if tiled else None
        if tiled and root is None:
            raise Unsupported("no root op to tile")
        fused = epilogue(ops, root) if root is not None else []
        if root is not None and root.name == "linalg.softmax" and fused:
            # the interpreter fuses ops into a linalg root's tiles only; a softmax's tiles hold whole
            # rows, so running the function op by op (untiled) computes the same values
            root, fused = None, []
        stage = self.program.target.output_stage if self.info.unit == "mac" else None
        if stage is not None and stage.present and fused:
            split = split_epilogue([e for e, _ in fused], stage)
            for op in split.stage_ops:
                if op.name in ROUND_OP_MODE:
                    self.overrides[op] = ("round", stage.rounding)
                elif op.name in _NARROWING:
                    self.overrides[op] = ("saturate",)
        out: list[FuncOp] = []
        root_index, fused_ops = -1, {e for e, _ in fused}
        epi: list[int] = []
        for op in ops:
            if op.name in ("func.return", "return"):
                break
            if root is not None and op == root:
                root_index = len(out)
            if op in fused_ops:
                epi.append(len(out))
            out.append(self._op(op))
        if root is not None:
            ranges = linalg_eval.structured(root).ranges if root.name != "linalg.softmax" else None
            if ranges is not None and tuple(ranges) != tuple(self.info.loop_ranges):
                raise Unsupported(f"root op loops {tuple(ranges)} differ from the program's {self.info.loop_ranges}")
        tasks = self.program.tasks_of(self.dispatch) if root is not None else []
        d = ExecDispatch(self.dispatch, self.info.symbol, "", n_bindings, tuple(self.values), tuple(out),
                         root_index, tuple(epi), tuple(tuple(t.tile_offsets) for t in tasks),
                         tuple(tuple(t.tile_sizes) for t in tasks))
        problem = check(d)
        if problem:
            raise Unsupported(problem)
        return d

    def _results(self, op: ir.Operation) -> tuple[int, ...]:
        return tuple(self._define(r) for r in op.results)

    def _op(self, op: ir.Operation) -> FuncOp:
        name = op.name
        if name == LOADS:
            offs, sizes, strides = self._slice(op, 1)
            return FuncOp("load", (), self._results(op), binding=self._binding(op.operands[0]), offsets=offs,
                          sizes=sizes, strides=strides)
        if name == STORES:
            offs, sizes, strides = self._slice(op, 2)
            return FuncOp("store", (self._id(op.operands[0]),), (), binding=self._binding(op.operands[1]),
                          offsets=offs, sizes=sizes, strides=strides)
        if name == "tensor.empty":
            return FuncOp("empty", (), self._results(op))
        if name == "arith.constant":
            return self._constant(op)
        if name in RESHAPES:
            return FuncOp("reshape", (self._id(op.operands[0]),), self._results(op))
        if name == "tensor.extract_slice":
            offs, sizes, strides = self._slice(op, 1)
            return FuncOp("extract_slice", (self._id(op.operands[0]),), self._results(op), offsets=offs,
                          sizes=sizes, strides=strides)
        if name == "tensor.insert_slice":
            offs, sizes, strides = self._slice(op, 2)
            return FuncOp("insert_slice", (self._id(op.operands[0]), self._id(op.operands[1])),
                          self._results(op), offsets=offs, sizes=sizes, strides=strides)
        if name == "tensor.pad":
            return self._pad(op)
        if name == "linalg.softmax":
            dim = ir.IntegerAttr(op.attributes["dimension"]).value
            return FuncOp("softmax", (self._id(op.operands[0]),), self._results(op), dim=dim)
        if name.startswith("linalg."):
            return self._linalg(op)
        if name in BODY_OPS and len(op.results) == 1:
            args = tuple(self._id(v) for v in op.operands)
            body = (self._body_op(op, {v: k for k, v in enumerate(op.operands)}),)
            return FuncOp("scalar", args, self._results(op), body=body, yields=(len(args),))
        raise Unsupported(f"op {name}")

    def _binding(self, v: ir.Value) -> int:
        k = self._id(v)
        if k >= len(self.func.regions[0].blocks[0].arguments):
            raise Unsupported("a load or store of something other than a binding")
        return k

    def _slice(self, op: ir.Operation, first_dynamic: int):
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if any(seg[first_dynamic:]):
            raise Unsupported(f"{op.name} with dynamic offsets or sizes")
        offs, sizes, strides = slice_params(op, first_dynamic, {})
        return tuple(offs), tuple(sizes), tuple(strides)

    def _constant(self, op: ir.Operation) -> FuncOp:
        r = op.results[0]
        value = self._results(op)
        v = self.values[value[0]]
        arr = np.asarray(constant_value(op))
        splat = arr.ndim > 0 and arr.size > 1 and bool(np.all(arr == arr.flat[0]))
        raw = (arr.flat[0:1] if splat else arr.reshape(-1)).astype(arr.dtype.newbyteorder("<"), copy=False)
        if str(r.type).endswith("xi1>") or v.element == "i1":
            raw = raw.astype(np.uint8)
        return FuncOp("const", (), value, data=base64.b64encode(raw.tobytes()).decode("ascii"), splat=splat)

    def _pad(self, op: ir.Operation) -> FuncOp:
        if len(list(op.operands)) != 1:
            raise Unsupported("tensor.pad with dynamic padding")
        low = tuple(static_values(op, "static_low", []))
        body = op.regions[0].blocks[0]
        term = list(body.operations)[-1].operation
        v = term.operands[0]
        if isinstance(v.owner, ir.Block):
            raise Unsupported("tensor.pad with an index-dependent value")
        if v.owner.operation.parent == op:
            raise Unsupported("tensor.pad whose value is computed in its body")
        return FuncOp("pad", (self._id(op.operands[0]), self._id(v)), self._results(op), offsets=low)

    def _linalg(self, op: ir.Operation) -> FuncOp:
        s = linalg_eval.structured(op)
        if s is None:
            raise Unsupported(f"op {op.name} (no indexing maps)")
        if s.n_loops > MAX_LOOPS:
            raise Unsupported(f"{op.name} with {s.n_loops} loops")
        maps = []
        for m in s.maps:
            rows = []
            for e in m.results:
                lin = linalg_eval.linear(e)
                if lin is None:
                    raise Unsupported(f"{op.name} with a non-linear indexing map {m}")
                rows.append(tuple(lin[0].get(d, 0) for d in range(s.n_loops)) + (lin[1],))
            maps.append(tuple(rows))
        block = s.block
        n_args = len(block.arguments)
        local = {a: k for k, a in enumerate(block.arguments)}
        body: list[BodyOp] = []
        body_ops = [o.operation for o in block.operations]

        def capture(v: ir.Value) -> None:
            if v in local:
                return
            outer = self._id(v)  # a function-level value read inside the body
            if self.values[outer].shape:
                raise Unsupported(f"a tensor read inside the body of {op.name}")
            body.append(BodyOp("outer", (), self.values[outer].element, attr=outer))
            local[v] = n_args + len(body) - 1

        for inner in body_ops[:-1]:
            if len(inner.results) != 1:
                raise Unsupported(f"{inner.name} in the body of {op.name}")
            if inner.name == "tensor.extract":  # a gather from a function-level tensor at computed indices
                body.append(self._gather(inner, local, capture, op.name))
                local[inner.results[0]] = n_args + len(body) - 1
                continue
            for v in inner.operands:
                capture(v)
            body.append(self._body_op(inner, local, op.name))
            local[inner.results[0]] = n_args + len(body) - 1
        for v in body_ops[-1].operands:
            capture(v)
        yields = tuple(local[v] for v in body_ops[-1].operands)
        args = tuple(self._id(v) for v in op.operands)
        return FuncOp("linalg", args, self._results(op), n_in=s.n_in, maps=tuple(maps), reduction=s.reduction,
                      ranges=tuple(s.ranges), body=tuple(body), yields=yields)

    def _gather(self, inner: ir.Operation, local: dict, capture, where: str) -> BodyOp:
        source, *indices = list(inner.operands)
        if source in local:
            raise Unsupported(f"tensor.extract from a value computed in the body of {where}")
        table = self._id(source)
        if len(indices) != len(self.values[table].shape) or len(indices) > MAX_RANK:
            raise Unsupported(f"tensor.extract with {len(indices)} indices in the body of {where}")
        for v in indices:
            capture(v)
        return BodyOp("extract", tuple(local[v] for v in indices), _element(inner.results[0].type), attr=table)

    def _body_op(self, inner: ir.Operation, local: dict, where: str = "a dispatch") -> BodyOp:
        name = inner.name
        rtype = _element(inner.results[0].type)
        if name == "arith.constant":
            val = np.asarray(constant_value(inner))
            if val.ndim:
                raise Unsupported(f"a tensor constant inside the body of {where}")
            if val.dtype.kind == "f":  # a hex float: exact, and JSON has no inf or nan
                return BodyOp("const", (), rtype, f=float(val).hex())
            return BodyOp("const", (), rtype, i=int(val))
        if name == "linalg.index":
            return BodyOp("index", (), rtype, attr=ir.IntegerAttr(inner.attributes["dim"]).value)
        if name not in BODY_OPS:
            raise Unsupported(f"{name} in the body of {where}")
        args = tuple(local[v] for v in inner.operands)
        attr = ir.IntegerAttr(inner.attributes["predicate"]).value if name in ("arith.cmpf", "arith.cmpi") else 0
        over = self.overrides.get(inner)
        return BodyOp(name, args, rtype, attr=attr, round=over[1] if over and over[0] == "round" else "",
                      saturate=bool(over and over[0] == "saturate"))
