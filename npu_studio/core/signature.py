"""Entry-point signatures read from a snapshot with the MLIR parser.

Modules imported from ONNX carry no ABI reflection in the vmfb, so the
input phase (where public functions still take plain tensors) tells us what
to feed them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .dtypes import numpy_value_dtype



@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int | None, ...]  # None for a dynamic dim
    dtype: str  # MLIR element type, e.g. "f32"

    @property
    def numpy_dtype(self):
        dt = numpy_value_dtype(self.dtype)
        if dt is None:
            raise ValueError(f"no numpy dtype for element type {self.dtype}")
        return dt

    def __str__(self) -> str:
        return "x".join("?" if d is None else str(d) for d in self.shape) + f"x{self.dtype}"


@dataclass(frozen=True)
class FunctionSignature:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def _spec(t) -> TensorSpec:
    from iree.compiler import ir

    rt = ir.RankedTensorType(t)
    shape = tuple(None if rt.is_dynamic_dim(i) else rt.shape[i] for i in range(rt.rank))
    return TensorSpec(shape, str(rt.element_type))


def public_functions(snapshot: Path) -> list[FunctionSignature]:
    """Public entry points of `snapshot` with tensor-typed arguments and results.

    Works on plain tensor functions (an .mlir input) and on phases after
    `abi`, where arguments are `!hal.buffer_view`s: their tensor types are
    read off the `hal.tensor.import` / `hal.tensor.export` ops of the
    function (or of its `$async` twin, which does the work).
    """
    from iree.compiler import ir

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(Path(snapshot).read_text())
        funcs = {}
        for op in module.body.operations:
            op = op.operation
            if op.name in ("func.func", "util.func"):
                funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
        sigs = []
        for name, op in funcs.items():
            if name.endswith("$async") or _visibility(op) != "public":
                continue
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if all(isinstance(t, ir.RankedTensorType) for t in [*ftype.inputs, *ftype.results]):
                sig = FunctionSignature(
                    name, tuple(_spec(t) for t in ftype.inputs), tuple(_spec(t) for t in ftype.results)
                )
            else:
                sig = _abi_signature(name, funcs.get(name + "$async", op), len(ftype.inputs))
            if sig is not None:
                sigs.append(sig)
        return sigs


def _visibility(op) -> str:
    from iree.compiler import ir

    if "sym_visibility" not in op.attributes:
        return "public"
    return ir.StringAttr(op.attributes["sym_visibility"]).value


def _abi_signature(name: str, func, num_args: int) -> FunctionSignature | None:
    from iree.compiler import ir

    inputs: dict[int, TensorSpec] = {}
    outputs: list[TensorSpec] = []
    entry = func.regions[0].blocks[0]

    def visit(op):
        if op.name == "hal.tensor.import" and isinstance(op.operands[0], ir.BlockArgument):
            arg = ir.BlockArgument(op.operands[0])
            if arg.owner == entry:
                inputs[arg.arg_number] = _spec(op.results[0].type)
        elif op.name == "hal.tensor.export":
            outputs.append(_spec(op.operands[0].type))
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    buffer_args = [i for i, a in enumerate(entry.arguments) if "hal.buffer_view" in str(a.type)]
    if not outputs or sorted(inputs) != buffer_args:
        return None
    return FunctionSignature(name, tuple(inputs[i] for i in sorted(inputs)), tuple(outputs))
