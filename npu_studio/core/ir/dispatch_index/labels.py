"""The root op of a dispatch and short labels of the ops fused with it."""

from __future__ import annotations

from npu_studio.core.ir.linalg import OpDescription

_COMPUTE_KINDS = ("conv", "depthwise_conv", "matmul", "batch_matmul")


def fused_label(d: OpDescription) -> str:
    """Short human label of a fused op: "fill", "bias add", "relu", ..."""
    if d.op_name == "linalg.fill":
        return "fill"
    if d.kind == "copy/transpose":
        return "transpose" if d.op_name != "linalg.copy" else "copy"
    if d.kind == "pooling":
        return "pool"
    if d.kind != "elementwise":
        return d.kind
    ops = list(d.body_ops)
    relu = "arith.select" in ops and "arith.cmpf" in ops or "arith.maximumf" in ops
    core = [o for o in ops if o not in ("arith.select", "arith.cmpf", "arith.maximumf")]
    parts: list[str] = []
    ranks = [len(t.shape) for t in d.inputs]
    broadcast = len(ranks) >= 2 and min(ranks) < max(ranks)
    if {"arith.subf", "arith.mulf", "arith.addf"} <= set(core) and len(core) >= 4:
        parts.append("batch norm")
    elif core == ["arith.addf"]:
        parts.append("bias add" if broadcast else "add")
    elif core == ["arith.mulf"]:
        parts.append("scale" if broadcast else "mul")
    elif core:
        parts.append("+".join(o.split(".", 1)[1] for o in core[:3]) + ("…" if len(core) > 3 else ""))
    if relu:
        parts.append("relu")
    if not parts and not ops:
        return "cast"  # only type conversions (e.g. an f32 accumulator to f16)
    return " + ".join(parts) if parts else "elementwise"


# The root is the dispatch's main op: MAC work first, then ops that reduce
# (a pooling or reduction feeds the elementwise ops fused after it), then
# the op with the most FLOPs. The NPU maps dispatches by this same root.
_ROOT_PRIORITY = {**{k: 0 for k in _COMPUTE_KINDS}, "pooling": 1, "reduction": 2, "softmax": 2}


def choose_root(ops: list[OpDescription]) -> OpDescription | None:
    if not ops:
        return None
    return min(ops, key=lambda d: (_ROOT_PRIORITY.get(d.kind, 3), -(d.flops or 0)))
