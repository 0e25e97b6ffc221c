"""Can a dispatch run on the NPU, and on which unit? One rule when it cannot.

The dispatch's kind, root op and dimensions are the dispatch index's
record (`site.record`): the NPU never classifies an op itself. From the
record and the dispatch body this gathers the facts the rules check
(the backend's rules, `backend.rules`): which unit computes it (MAC array, vector unit, DMA, or
CPU), the element and accumulator types, transposed MAC operands, the
vector functions used, and for data-movement dispatches the transfer.
"""

from __future__ import annotations

from dataclasses import replace

from iree.compiler import ir
from iree.compiler.dialects import linalg

from ...ir.flow_graph import DispatchSite, FlowGraph
from ...ir.linalg import OpDescription
from .access import Source, accesses, loops_of
from .dispatch_plan import DispatchPlan
from ..target.output_stage import split_epilogue, vector_work
from ..backend.registry import backend_of
from ..backend.rules import LEGALIZE
from .op_kinds import MAC_KINDS, VECTOR_KINDS, function_of
from ..target.target import NpuTarget
from .transfers import memcpy_transfer, op_transfer


def linalg_ops(func: ir.Operation) -> list[ir.Operation]:
    """The linalg ops of a dispatch body in pre-order, as the index walks them."""
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if inner.name.startswith("linalg.") and inner.name not in ("linalg.yield",
                                                                               "linalg.index"):
                        found.append(inner)
                    walk(inner)

    walk(func)
    return found


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    try:
        attr = linalg.get_indexing_maps(op)
    except (TypeError, ValueError):
        return None
    return None if attr is None else [ir.AffineMapAttr(a).value for a in attr]


def _transposed(desc: OpDescription, maps: list[ir.AffineMap] | None) -> tuple[str, ...]:
    """Contraction inputs not read in matmul order for the output's layout.

    With the output laid out (P, Q) (P, Q being M and N in either order),
    the array computes out = L(P, K) . R(K, Q); an input read (K, P) or
    (Q, K) is transposed.
    """
    if maps is None or desc.kind not in ("matmul", "batch_matmul") or len(maps) < 3:
        return ()
    dims = desc.loop_dims

    def names(m: ir.AffineMap) -> list[str]:
        return [dims[e.position] for e in m.results if isinstance(e, ir.AffineDimExpr)]

    out_mn = [n for n in names(maps[-1]) if n in ("M", "N")]
    if len(out_mn) != 2:
        return ()
    p, q = out_mn
    found = []
    for i, m in enumerate(maps[:len(desc.inputs)]):
        seen = names(m)
        want = [p, "K"] if p in seen else ["K", q]
        if [n for n in seen if n in want] == want[::-1]:
            found.append(f"input {i}")
    return tuple(found)


def _facts(plan: DispatchPlan, graph: FlowGraph, target: NpuTarget) -> None:
    site, rec = plan.site, plan.site.record
    func = graph.func_of(site)
    ops = linalg_ops(func) if func is not None else []
    if len(ops) != len(rec.ops) or any(o.name != d.op_name for o, d in zip(ops, rec.ops)):
        plan.unmapped = "the dispatch index and the module disagree on its ops"
        return
    by_desc = {id(d): o for o, d in zip(ops, rec.ops)}
    desc = rec.root
    plan.input_shapes = [graph.buffers[b].shape for b in site.reads]
    plan.output_shapes = [graph.buffers[b].shape for b in site.writes]
    plan.all_shapes = [(f"input {i}", s) for i, s in enumerate(plan.input_shapes)] + \
        [(f"output {i}", s) for i, s in enumerate(plan.output_shapes)]
    plan.dtypes_used = [(f"input {i}", graph.buffers[b].dtype) for i, b in enumerate(site.reads)] + \
        [(f"output {i}", graph.buffers[b].dtype) for i, b in enumerate(site.writes)]
    if desc is None:
        plan.kind = rec.kind or "none"  # the index's name for what it moves: copy, slice, insert
        plan.transfer = memcpy_transfer(graph, site, func) if func is not None else None
        if plan.transfer is not None:
            plan.unit = "dma"
        else:
            plan.unmapped = ", ".join(sorted({o.name for o in ops})) or "no linalg op"
        return
    plan.desc, plan.kind, plan.op_name = desc, desc.kind, desc.op_name
    plan.root_op = by_desc[id(desc)]
    maps = _maps(plan.root_op)
    # rec.fused labels the non-root ops in order; fills only set up outputs
    labelled = [(lb, d) for lb, d in zip(rec.fused, [x for x in rec.ops if x is not desc])
                if d.op_name != "linalg.fill"]
    fused = [d for _, d in labelled]
    plan.fused_ops = [by_desc[id(d)] for d in fused]
    plan.fused_kinds = [(lb, d.kind) for lb, d in labelled]
    plan.root_input_dtypes = tuple(t.dtype for t in desc.inputs if t.shape)
    plan.dtypes_used += [(f"root input {i}", dt) for i, dt in enumerate(plan.root_input_dtypes)]
    plan.all_shapes += [(f"root input {i}", t.shape) for i, t in enumerate(desc.inputs) if t.shape]
    plan.root_shapes = [(f"root input {i}", t.shape) for i, t in enumerate(desc.inputs) if t.shape] + \
        [(f"root output {i}", t.shape) for i, t in enumerate(desc.outputs)]
    if desc.kind in MAC_KINDS:
        plan.unit = "mac"
        plan.acc_dtype = desc.outputs[0].dtype if desc.outputs else ""
        plan.grouped = bool(desc.groups) and desc.kind == "conv" and "G" in desc.dims
        plan.transposed = _transposed(desc, maps)
        split = split_epilogue(plan.fused_ops, target.output_stage)
        plan.vector_ops, plan.requant, plan.stage_note = tuple(split.vector_ops), split.requant, split.why_not
        plan.epilogue = _epilogue_text(plan)
    elif desc.kind in VECTOR_KINDS:
        plan.unit = "vector"
        plan.vector_ops = tuple(o for d, op in zip([desc, *fused], [plan.root_op, *plan.fused_ops])
                             for o in (vector_work(op) if op.regions else d.body_ops))
    else:
        plan.transfer = op_transfer(desc, maps) if not fused else None
        if plan.transfer is not None:
            plan.unit = "dma"
        else:
            plan.unmapped = f"{desc.kind} {desc.op_name}" + (
                " with fused " + ", ".join(lb for lb, _ in plan.fused_kinds) if fused else "")
    plan.vector_cost = sum(target.function_cost(function_of(o)) or 0 for o in plan.vector_ops)


def _epilogue_text(plan: DispatchPlan) -> str:
    """'requantize per-tensor, round half-even, zero point, clamp -128, 127, i8; vector: sub, mul'."""
    parts = [r.describe() for r in plan.requant]
    functions = list(dict.fromkeys(function_of(o) for o in plan.vector_ops))
    if functions:
        parts.append("vector: " + ", ".join(functions))
    return "; ".join(parts)


def analyze(graph: FlowGraph, site: DispatchSite, target: NpuTarget) -> DispatchPlan:
    """The dispatch's plan after npu-legalize: its facts, and the first npu-legalize rule that fails."""
    plan = DispatchPlan(site)
    _facts(plan, graph, target)
    if plan.unit in ("mac", "vector"):
        plan.loops = loops_of(plan.desc)
        plan.accesses = accesses(plan.root_op, plan.fused_ops, plan.consts)
    if not backend_of(target).rules.check(plan, target, LEGALIZE):
        return plan
    if plan.accesses:
        for i, b in enumerate(plan.accesses):
            if b.access.role == "input" and _is_weight(graph, site, b.source):
                plan.accesses[i] = replace(b, access=replace(b.access, role="weight"))
    return plan


def _is_weight(graph: FlowGraph, site: DispatchSite, src: Source) -> bool:
    if src.kind == "const":
        return True
    if src.kind == "arg" and src.index < len(site.args) and site.args[src.index]:
        return graph.buffers[site.args[src.index]].kind in ("weight", "constant")
    return False
