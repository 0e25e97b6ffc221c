"""The executable that hands one NPU dispatch to the plugin.

IREE's dump of a dispatch's `hal.executable` (executables/sources/) keeps
its name, variant target and export layout; the replacement keeps them too,
so `--iree-hal-substitute-executable-source` swaps it in. Its export runs
one workgroup, whose body views every binding as bytes (a `memref<Nxi8>`
subspan), takes each view's base pointer, offset and size, and calls the
external function `npu_dispatch_<N>` once, with the number of bindings and
then the (base, offset, bytes) triples in the order of the flow dispatch
function's arguments: the plugin checks its description against those
sizes. The plugin resolves that import (plugin_src/npu_plugin.c).

The rewrite works on the parsed dump: the body's ops are dropped except
what computes the binding offsets (push-constant loads and casts), which
the new byte views use as they are. A dispatch is left to IREE's CPU code
(`NotReplaceable`, with the reason) when its bindings cannot be lined up
with its flow arguments: a dynamic shape or a scalar operand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from iree.compiler import ir

from ... import dtypes
from ...ir.mlir_text import parse_module

IMPORT_PREFIX = "npu_dispatch_"
SUBSPAN = "hal.interface.binding.subspan"


class NotReplaceable(Exception):
    """This dispatch stays on IREE's CPU code; the message says why."""


@dataclass(frozen=True)
class BindingSpec:
    """One argument of the flow dispatch function, as the import receives it."""

    access: str  # readonly | writeonly | readwrite
    shape: tuple[int, ...]
    element: str  # MLIR element type, e.g. f32

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _element_bytes(self.element)

    def to_dict(self) -> dict:
        return {"access": self.access, "shape": list(self.shape), "element": self.element}

    @classmethod
    def from_dict(cls, d: dict) -> "BindingSpec":
        return cls(d["access"], tuple(d["shape"]), d["element"])


@dataclass(frozen=True)
class Replacement:
    executable: str
    export: str
    dispatch: int  # the import is npu_dispatch_<dispatch>
    bindings: tuple[BindingSpec, ...]
    text: str

    @property
    def import_name(self) -> str:
        return f"{IMPORT_PREFIX}{self.dispatch}"


def _element_bytes(element: str) -> int:
    # Bindings of signless integers and plain floats only (no index, ui8, f8E4M3FN...).
    if element.startswith(("f", "i", "bf")) and element.lstrip("bfi").isdigit():
        return dtypes.nbytes(element)
    raise NotReplaceable(f"element type {element} has no byte size")


def dispatch_tensor_spec(t: ir.Type | str) -> BindingSpec | None:
    """`!iree_tensor_ext.dispatch.tensor<readonly:tensor<3x4xf32>>` -> BindingSpec; None for other types."""
    text = str(t)
    head = "dispatch.tensor<"
    if head not in text:
        return None
    access, _, tensor = text.split(head, 1)[1][:-1].partition(":")
    tt = ir.RankedTensorType(ir.Type.parse(tensor)) if tensor.startswith("tensor<") else None
    if tt is None:
        return None
    if any(ir.ShapedType.is_dynamic_size(d) for d in tt.shape):
        raise NotReplaceable(f"binding {tensor} has a dynamic shape")
    return BindingSpec(access, tuple(tt.shape), str(tt.element_type))


def flow_bindings(func: ir.Operation) -> tuple[BindingSpec, ...]:
    """The flow dispatch function's arguments as bindings; NotReplaceable for a scalar operand."""
    specs = []
    for arg in func.regions[0].blocks[0].arguments:
        spec = dispatch_tensor_spec(arg.type)
        if spec is None:
            raise NotReplaceable(f"operand of type {arg.type} is not a tensor binding")
        specs.append(spec)
    return tuple(specs)


def _ops(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation


def _find(op: ir.Operation, name: str) -> list[ir.Operation]:
    return [o for o in _ops(op) if o.name == name]


def _sym(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _subspans(func: ir.Operation) -> list[ir.Operation]:
    subspans = [op for op in _ops(func) if op.name == SUBSPAN]
    for op in subspans:
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if len(seg) > 1 and seg[1]:
            raise NotReplaceable("a binding has a dynamic size")
    return subspans


def build_replacement(source: Path, flow_func: ir.Operation, dispatch: int) -> Replacement:
    """The replacement of the executable dumped at `source` for dispatch #`dispatch` (see the module doc)."""
    wanted = flow_bindings(flow_func)
    ctx, module = parse_module(source.read_text(encoding="utf-8"), source)
    with ctx:
        exes = _find(module.operation, "hal.executable")
        if len(exes) != 1:
            raise NotReplaceable(f"{source.name} holds {len(exes)} executables")
        exe = exes[0]
        variants = _find(exe, "hal.executable.variant")
        if len(variants) != 1:
            raise NotReplaceable(f"@{_sym(exe)} has {len(variants)} variants")
        variant = variants[0]
        exports = _find(variant, "hal.executable.export")
        if len(exports) != 1:
            raise NotReplaceable(f"@{_sym(exe)} has {len(exports)} exports; one dispatch per executable is replaced")
        export = exports[0]
        inner = next((m for m in _ops(variant) if m.name == "builtin.module"), None)
        func = next((f for f in _ops(inner) if f.name == "func.func" and _sym(f) == _sym(export)), None) if inner else None
        if func is None:
            raise NotReplaceable(f"no function for export @{_sym(export)}")
        subspans = _subspans(func)
        specs = tuple(dispatch_tensor_spec(op.results[0].type) for op in subspans)
        if specs != wanted:
            raise NotReplaceable(f"its {len(subspans)} bindings do not line up with the flow dispatch's "
                                 f"{len(wanted)} arguments")
        with ir.Location.unknown():
            _one_workgroup(export)
            _call_import(inner, func, subspans, specs, f"{IMPORT_PREFIX}{dispatch}")
        text = f"// NPU dispatch #{dispatch}: the body calls the NPU plugin's import once (npu_studio/core/npu/hal).\n"
        text += str(exe)
    return Replacement(_sym(exe), _sym(export), dispatch, wanted, text)


def _one_workgroup(export: ir.Operation) -> None:
    """The export's workgroup count becomes 1x1x1: the import is called once per dispatch."""
    block = export.regions[0].blocks[0]
    for op in reversed([o.operation for o in block.operations]):
        op.erase()
    with ir.InsertionPoint(block):
        one = ir.Operation.create("arith.constant", results=[ir.IndexType.get()],
                                  attributes={"value": ir.IntegerAttr.get(ir.IndexType.get(), 1)})
        ir.Operation.create("hal.return", operands=[one.result] * 3)


def _call_import(inner: ir.Operation, func: ir.Operation, subspans: list[ir.Operation],
                 specs: tuple[BindingSpec, ...], name: str) -> None:
    """Replace the function's body by byte views of its bindings and one call of the import `name`.

    What computes the binding offsets (push-constant loads and casts) is kept.
    """
    block = func.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    ret = ops[-1]
    keep: list[ir.Operation] = []

    def mark(value: ir.Value) -> None:
        owner = value.owner
        if isinstance(owner, ir.Block):
            return
        op = owner.operation
        if not any(op == k for k in keep):
            keep.append(op)
            for v in op.operands:
                mark(v)

    for op in subspans:
        for v in op.operands:
            mark(v)
    index, base_t = ir.IndexType.get(), ir.Type.parse("memref<i8>")
    with ir.InsertionPoint(ret):
        count = ir.Operation.create("arith.constant", results=[index],
                                    attributes={"value": ir.IntegerAttr.get(index, len(specs))})
        args = [count.result]
        for op, spec in zip(subspans, specs):
            view_t = ir.Type.parse(f"memref<{max(1, spec.nbytes)}xi8, strided<[1], offset: ?>>")
            view = ir.Operation.create(SUBSPAN, results=[view_t], operands=list(op.operands),
                                       attributes={n: op.attributes[n] for n in op.attributes})
            meta = ir.Operation.create("memref.extract_strided_metadata", results=[base_t, index, index, index],
                                       operands=[view.result])
            args += [meta.results[0], meta.results[1], meta.results[2]]
        ir.Operation.create("func.call", operands=args, attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
    for op in reversed(ops[:-1]):
        if not any(op == k for k in keep):
            op.erase()
    fn_type = ir.FunctionType.get([index] + [base_t, index, index] * len(specs), [])
    with ir.InsertionPoint.at_block_begin(inner.regions[0].blocks[0]):
        ir.Operation.create("func.func", regions=1, attributes={
            "sym_name": ir.StringAttr.get(name), "function_type": ir.TypeAttr.get(fn_type),
            "sym_visibility": ir.StringAttr.get("private"), "llvm.bareptr": ir.BoolAttr.get(True)})
