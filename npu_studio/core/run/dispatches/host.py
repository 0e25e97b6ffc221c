"""Interpret the host side of a `flow` module: globals, initializers, the entry function.

Tensors are numpy arrays; `flow.dispatch` sites are handed to a callback
(the functional simulator decides how each dispatch is computed). Weights
come from the module's own constants and, for `#stream.parameter.named`
globals, from the workspace's parameter archive. Dispatches are numbered
as `flow_graph.FlowGraph` numbers them (program order of the sites).
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
from iree.compiler import ir

from ...compile.params import ParameterArchive
from ...ir.flow_graph import FlowGraph
from .scalar_ops import (
    NotInterpretable,
    constant_value,
    evaluate,
    known,
    numpy_dtype,
    scalar_value,
)

# (dispatch index, flow.dispatch op, argument values) -> result arrays
DispatchFn = Callable[[int, ir.Operation, list], list]

_PARAM = re.compile(r'#stream\.parameter\.named<"([^"]*)"::"([^"]*)">')
_PASS = {"flow.tensor.transfer", "flow.tensor.tie_shape", "hal.tensor.barrier", "hal.tensor.export",
         "util.optimization_barrier", "flow.tensor.barrier"}


def _shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, ir.ShapedType) else ()


def _is_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def segments(op: ir.Operation) -> list[list[ir.Value]]:
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands, out, pos = list(op.operands), [], 0
    for n in sizes:
        out.append(operands[pos:pos + n])
        pos += n
    return out


def tied_operands(op: ir.Operation) -> list[int]:
    if "tied_operands" not in op.attributes:
        return [-1] * len(op.results)
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["tied_operands"])]


def _dense_array(dense: ir.DenseElementsAttr, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The attribute's elements; f16/bf16 (no buffer access in the bindings) are read from its text."""
    try:
        return np.array(dense, copy=True).astype(dtype, copy=False).reshape(shape)
    except TypeError:
        pass
    body = str(dense).rsplit(" : ", 1)[0].strip()  # dense<...> : tensor<...>
    body = body[body.index("<") + 1:-1]
    if body.startswith('"0x'):  # raw little-endian bytes, as MLIR prints large constants
        return np.frombuffer(bytes.fromhex(body[3:body.index('"', 3)]), dtype).reshape(shape).copy()
    values = [v for v in body.replace("[", " ").replace("]", " ").replace(",", " ").split() if v]
    return np.array([float(v) for v in values], np.float64).astype(dtype).reshape(shape)


class HostInterpreter:
    def __init__(self, module: ir.Module, archive: ParameterArchive | None, dispatch: DispatchFn):
        self.module = module
        self.archive = archive
        self.dispatch = dispatch
        self.graph = FlowGraph(module.operation)
        self.site_index = {s.op: s.index for s in self.graph.sites}
        self.globals: dict[str, object] = {}
        self.funcs: dict[str, ir.Operation] = {}
        self._top = [op.operation for op in module.body.operations]
        for op in self._top:
            if op.name == "util.global":
                self._global(op)
            elif op.name == "util.func":
                self.funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op

    def initialize(self) -> None:
        """Run the module's initializers (at load time, in order; they may dispatch too)."""
        for op in self._top:
            if op.name == "util.initializer":
                self._block(op.regions[0].blocks[0], {})

    def _global(self, op: ir.Operation) -> None:
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if "initial_value" not in op.attributes:
            return
        t = ir.TypeAttr(op.attributes["type"]).value
        if not _is_tensor(t):
            return
        attr = op.attributes["initial_value"]
        m = _PARAM.search(str(attr))
        if m:
            if self.archive is None:
                raise NotInterpretable(f"parameter {m.group(2)!r} but the workspace has no archive")
            self.globals[name] = self.archive.array(m.group(2), _shape(t), numpy_dtype(t.element_type))
            return
        try:
            dense = ir.DenseElementsAttr(attr)
        except (ValueError, TypeError):
            raise NotInterpretable(f"global @{name}: initial value {str(attr)[:40]}... is not dense data") from None
        dtype = numpy_dtype(t.element_type)
        if dense.is_splat:
            self.globals[name] = np.full(_shape(t), scalar_value(dense.get_splat_value(), t.element_type), dtype)
        else:
            self.globals[name] = _dense_array(dense, dtype, _shape(t))

    def call(self, name: str, args: list) -> list:
        func = self.funcs.get(name)
        if func is None:
            raise NotInterpretable(f"no function @{name}")
        block = func.regions[0].blocks[0]
        return self._block(block, dict(zip(block.arguments, args)))

    def _block(self, block: ir.Block, env: dict) -> list:
        for op in block.operations:
            op = op.operation
            if op.name in ("util.return", "func.return"):
                return [env.get(v) for v in op.operands]
            self._op(op, env)
        return []

    def _op(self, op: ir.Operation, env: dict) -> None:
        name = op.name
        args = [env.get(v) for v in op.operands]
        results = list(op.results)
        if name == "flow.dispatch":
            outs = self.dispatch(self.site_index[op], op, [env.get(v) for v in segments(op)[1]])
            for r, v in zip(results, outs):
                env[r] = v
        elif name == "util.call":
            callee = str(op.attributes["callee"]).lstrip("@").strip('"')
            for r, v in zip(results, self.call(callee, args)):
                env[r] = v
        elif name == "hal.tensor.import":
            env[results[0]] = np.asarray(args[0]).reshape(_shape(results[0].type))
        elif name in _PASS:
            for r, v in zip(results, args):
                env[r] = v
        elif name in ("flow.tensor.reshape", "flow.tensor.bitcast"):
            a = np.asarray(args[0])
            dtype = numpy_dtype(results[0].type.element_type)
            env[results[0]] = (a if a.dtype == dtype else a.view(dtype)).reshape(_shape(results[0].type))
        elif name == "flow.tensor.splat":
            t = results[0].type
            env[results[0]] = np.full(_shape(t), args[0], numpy_dtype(t.element_type))
        elif name in ("flow.tensor.empty", "flow.tensor.alloca"):
            t = results[0].type
            env[results[0]] = np.zeros(_shape(t), numpy_dtype(t.element_type))
        elif name in ("flow.tensor.constant", "arith.constant"):
            env[results[0]] = constant_value(op)
        elif name == "flow.tensor.clone":
            env[results[0]] = np.array(args[0], copy=True)
        elif name == "util.global.load":
            g = str(op.attributes["global"]).lstrip("@").strip('"')
            env[results[0]] = self.globals[g]
        elif name == "util.global.store":
            g = str(op.attributes["global"]).lstrip("@").strip('"')
            self.globals[g] = args[0]
        elif name == "flow.tensor.update":
            seg = segments(op)  # target, target dims, start indices, update, update dims
            target, update = np.array(env[seg[0][0]], copy=True), np.asarray(env[seg[3][0]])
            starts = [int(env[v]) for v in seg[2]]
            target[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
            env[results[0]] = target
        elif name == "flow.tensor.slice":
            seg = segments(op)
            starts = [int(env[v]) for v in seg[2]]
            lengths = [int(env[v]) for v in seg[3]]
            env[results[0]] = np.array(np.asarray(args[0])[tuple(slice(s, s + n) for s, n in zip(starts, lengths))])
        elif known(name) and len(results) == 1 and not _is_tensor(results[0].type):
            env[results[0]] = evaluate(op, args)
        elif any(_is_tensor(r.type) for r in results):
            raise NotInterpretable(f"host op {name}")
        # fences, devices and other runtime plumbing carry no data

