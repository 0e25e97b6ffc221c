"""Which ONNX nodes a dispatch applies first to the values it reads, binding by binding.

When IREE splits one ONNX op over two dispatches (a GlobalAveragePool as a sum, then the
division fused into the next dispatch; a LayerNorm's mean, then the normalization), the
second dispatch's first op on the first one's result is located at that same ONNX node:
the first result is only part of the node's output. This reads that evidence from a flow
module: for each dispatch function and each of its arguments, the ONNX nodes named by the
locations of the ops that first compute with the loaded values (through data movement:
slices, reshapes; into a linalg op's body through its block argument). Constants and the
region's own fused location are not read: CSE merges constants of unrelated nodes.
"""

from __future__ import annotations

from ..lazy_import import lazy_module
from .flow_functions import dispatch_functions
from .dispatch_index.provenance import onnx_names

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

LOADS = ("iree_tensor_ext.dispatch.tensor.load", "flow.dispatch.tensor.load")
# Ops that only move the values they read: their results are followed, they name nothing.
MOVES = frozenset({"tensor.extract_slice", "tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape",
                   "tensor.cast", "tensor.pad", "tensor.insert_slice", "linalg.transpose", "linalg.copy"})
MAX_DEPTH = 8


def _names(op) -> list[str]:
    out: list[str] = []
    onnx_names(op.location, out, set())
    return out


def _single(op) -> list[str]:
    """The node an op's own location names, when it names one (a fused location of a linalg op
    names the nodes of its producers too)."""
    names = _names(op)
    return names if len(names) == 1 else []


def _first_users(value, found: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    for use in value.uses:
        user = use.owner
        if isinstance(user, ir.OpView):
            user = user.operation
        if user.name in MOVES:
            for r in user.results:
                _first_users(r, found, depth + 1)
        elif user.name.startswith("linalg.") and len(user.regions) and len(user.regions[0].blocks):
            body = user.regions[0].blocks[0]
            k = use.operand_number
            if k < len(body.arguments) and user.name == "linalg.generic":
                inside: list[str] = []
                for inner in body.arguments[k].uses:
                    owner = inner.owner.operation if isinstance(inner.owner, ir.OpView) else inner.owner
                    if owner.name != "linalg.yield":
                        inside.extend(_names(owner))
                found.extend(inside or _single(user))  # body ops without a location: the op's own
            else:  # a named op (matmul, conv): its own location
                found.extend(_single(user))
        elif user.name not in ("arith.constant",) and not user.name.endswith(".store"):
            found.extend(_single(user))


def function_first_uses(func) -> dict[int, set[str]]:
    """Argument position -> the ONNX nodes named where the function first computes with it."""
    entry = func.regions[0].blocks[0]
    out: dict[int, set[str]] = {}
    for op in entry.operations:
        op = op.operation
        if op.name not in LOADS or not isinstance(op.operands[0], ir.BlockArgument):
            continue
        arg = ir.BlockArgument(op.operands[0])
        if arg.owner == entry:
            found: list[str] = []
            _first_users(op.results[0], found, 0)
            out.setdefault(arg.arg_number, set()).update(found)
    return out


def module_first_uses(module) -> dict[tuple[str, str], dict[int, set[str]]]:
    """(executable, export function) -> `function_first_uses`, for every dispatch function of a flow module."""
    return {key: function_first_uses(f) for key, f in dispatch_functions(module)}
