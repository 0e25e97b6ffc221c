"""Can a dispatch run on the NPU? One human reason when it cannot.

Checks, in order: dynamic shapes, a root op to map, op kinds (root and
fused), element types, the target's rank and dimension limits, and
indexing maps to tile by. The root op is the dispatch's main linalg op
(a conv or contraction before pooling, reductions, elementwise ops),
as classified by `linalg_info.describe_linalg_op`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from iree.compiler import ir

from ..linalg_info import OpDescription, describe_linalg_op
from .access import BoundAccess, Source, accesses, loops_of
from .flow_graph import DispatchSite, FlowGraph, tensor_shape_dtype
from .target import NpuTarget
from .tiling import Loop

PRIORITY = {"conv": 0, "depthwise_conv": 0, "matmul": 0, "batch_matmul": 0,
            "pooling": 1, "reduction": 2, "elementwise": 3, "copy/transpose": 4}


@dataclass
class DispatchAnalysis:
    site: DispatchSite
    kind: str = "none"
    op_name: str = ""
    desc: OpDescription | None = None
    loops: tuple[Loop, ...] = ()
    accesses: list[BoundAccess] = field(default_factory=list)
    consts: list[ir.Operation] = field(default_factory=list)
    reason: str = ""

    @property
    def legal(self) -> bool:
        return not self.reason


def _linalg_ops(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if inner.name.startswith("linalg.") and inner.name not in ("linalg.yield", "linalg.index"):
                        found.append(inner)
                    else:
                        walk(inner)

    walk(func)
    return found


def _tensor_types(ops: list[ir.Operation]):
    for op in ops:
        for v in list(op.operands) + list(op.results):
            sd = tensor_shape_dtype(v.type)
            if sd is not None:
                yield sd


def analyze(graph: FlowGraph, site: DispatchSite, target: NpuTarget) -> DispatchAnalysis:
    a = DispatchAnalysis(site)
    func = graph.func_of(site)
    ops = _linalg_ops(func) if func is not None else []
    described = [(op, describe_linalg_op(op)) for op in ops if op.name != "linalg.fill"]
    described = [(op, d) for op, d in described if d is not None]
    if described:
        root, desc = min(
            described, key=lambda od: (PRIORITY.get(od[1].kind, 5), -(od[1].flops or 0)))
        a.desc, a.kind, a.op_name = desc, desc.kind, root.name
        a.loops = loops_of(desc)
    dynamic = any(graph.buffers[b].dynamic for b in site.reads + site.writes) or any(
        None in shape for shape, _ in _tensor_types(ops))
    if dynamic or (a.desc is not None and not a.desc.is_static):
        a.reason = "dynamic shape"
        return a
    if a.desc is None:
        names = sorted({op.name for op in ops if op.name != "linalg.fill"})
        a.reason = (f"cannot classify {', '.join(names)}" if names
                    else "no linalg op to map (data movement only)")
        return a
    for op, d in described:
        if d.kind not in target.op_kinds:
            a.reason = f"unsupported op kind {d.kind}"
            return a
    for shape, dtype in _tensor_types(ops):
        if dtype not in target.dtypes:
            a.reason = f"unsupported dtype {dtype}"
            return a
    for shape, dtype in _tensor_types(ops):
        if len(shape) > target.max_rank:
            a.reason = f"rank {len(shape)} exceeds limit max_rank={target.max_rank}"
            return a
        big = max(shape, default=0)
        if big > target.max_dim_size:
            a.reason = f"dimension {big} exceeds limit max_dim_size={target.max_dim_size}"
            return a
    fused = [op for op, d in described if op != root]
    bound = accesses(root, fused, a.consts)
    if bound is None:
        a.reason = f"cannot tile {root.name}: no indexing maps"
        return a
    for i, b in enumerate(bound):
        if b.access.role == "input" and _is_weight(graph, site, b.source):
            bound[i] = replace(b, access=replace(b.access, role="weight"))
    a.accesses = bound
    return a


def _is_weight(graph: FlowGraph, site: DispatchSite, src: Source) -> bool:
    if src.kind == "const":
        return True
    if src.kind == "arg" and src.index < len(site.args) and site.args[src.index]:
        return graph.buffers[site.args[src.index]].kind in ("weight", "constant")
    return False
