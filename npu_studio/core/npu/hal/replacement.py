"""The executable that hands one NPU dispatch to the plugin.

IREE's dump of a dispatch's `hal.executable` (executables/sources/) keeps
its name, variant target and export layout; the replacement keeps them too,
so `--iree-hal-substitute-executable-source` swaps it in. Its export runs
one workgroup, whose body views every binding as bytes (a `memref<Nxi8>`
subspan), takes each view's base pointer and offset, and calls the external
function `npu_dispatch_<N>` once, with the (base, offset) pairs in the order
of the flow dispatch function's arguments. The plugin resolves that import
(plugin_src/npu_plugin.c).

A dispatch is left to IREE's CPU code (`NotReplaceable`, with the reason)
when its bindings cannot be lined up with its flow arguments: a dynamic
shape, a scalar operand, or a binding offset that is not a constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from iree.compiler import ir

from ...ir.mlir_text import parse_module

IMPORT_PREFIX = "npu_dispatch_"
SUBSPAN = "hal.interface.binding.subspan"
_FLAG_BITS = ((1, "ReadOnly"), (2, "Indirect"))


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
    if element.startswith(("f", "i", "bf")) and element.lstrip("bfi").isdigit():
        return max(1, int(element.lstrip("bfi")) // 8)
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


def _flags(bits: int) -> str:
    names = [n for b, n in _FLAG_BITS if bits & b]
    return f' flags("{"|".join(names)}")' if names else ""


@dataclass(frozen=True)
class _Subspan:
    binding: int
    offset: int  # bytes
    flags: int
    alignment: int
    spec: BindingSpec


def _subspans(func: ir.Operation) -> list[_Subspan]:
    out = []
    for op in _walk(func):
        if op.name != SUBSPAN:
            continue
        operands = list(op.operands)
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if seg[0] != 1 or (len(seg) > 1 and seg[1]):
            raise NotReplaceable("a binding has a dynamic size")
        owner = operands[0].owner
        owner = getattr(owner, "operation", owner)
        if not isinstance(owner, ir.Operation) or owner.name != "arith.constant":
            raise NotReplaceable("a binding offset is computed at run time")
        spec = dispatch_tensor_spec(op.results[0].type)
        if spec is None:
            raise NotReplaceable(f"binding of type {op.results[0].type} is not a dispatch tensor")
        flags = ir.IntegerAttr(op.attributes["descriptor_flags"]).value if "descriptor_flags" in op.attributes else 0
        align = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else 64
        out.append(_Subspan(ir.IntegerAttr(op.attributes["binding"]).value,
                            ir.IntegerAttr(owner.attributes["value"]).value, flags, align, spec))
    return out


def _walk(op: ir.Operation):
    for inner in _ops(op):
        yield inner
        yield from _walk(inner)


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
        if tuple(s.spec for s in subspans) != wanted:
            raise NotReplaceable(f"its {len(subspans)} bindings do not line up with the flow dispatch's "
                                 f"{len(wanted)} arguments")
        text = _text(_sym(exe), _sym(variant), str(variant.attributes["target"]), _sym(export),
                     str(export.attributes["layout"]), subspans, dispatch)
    return Replacement(_sym(exe), _sym(export), dispatch, wanted, text)


def _text(exe: str, variant: str, target: str, export: str, layout: str, subspans: list[_Subspan],
          dispatch: int) -> str:
    body, args, types = [], [], []
    for i, s in enumerate(subspans):
        mtype = f"memref<{max(1, s.spec.nbytes)}xi8, strided<[1], offset: ?>>"
        body += [f"%off{i} = arith.constant {s.offset} : index",
                 f"%m{i} = {SUBSPAN} layout({layout}) binding({s.binding}) alignment({s.alignment}) "
                 f"offset(%off{i}){_flags(s.flags)} : {mtype}",
                 f"%base{i}, %o{i}, %n{i}, %st{i} = memref.extract_strided_metadata %m{i} : {mtype} "
                 f"-> memref<i8>, index, index, index"]
        args += [f"%base{i}", f"%o{i}"]
        types += ["memref<i8>", "index"]
    sig = ", ".join(types)
    lines = "\n        ".join(body)
    return f"""// NPU dispatch #{dispatch}: the body calls the NPU plugin's import once (npu_studio/core/npu/hal).
hal.executable public @"{exe}" {{
  hal.executable.variant public @"{variant}" target({target}) {{
    hal.executable.export public @"{export}" ordinal(0) layout({layout}) count(%device: !hal.device) -> (index, index, index) {{
      %one = arith.constant 1 : index
      hal.return %one, %one, %one : index, index, index
    }}
    builtin.module {{
      func.func private @{IMPORT_PREFIX}{dispatch}({sig}) attributes {{llvm.bareptr = true}}
      func.func @"{export}"() {{
        {lines}
        func.call @{IMPORT_PREFIX}{dispatch}({", ".join(args)}) : ({sig}) -> ()
        return
      }}
    }}
  }}
}}
"""
