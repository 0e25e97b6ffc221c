"""Two graphs side by side: their dispatches aligned by ONNX provenance, each added, removed, changed or same.

Dispatch numbers are no key across builds (a flag or an edit can split, merge or
reorder dispatches), so a dispatch is matched by the ONNX nodes it fused: first
by the whole list, then by its root ONNX node (the first it names); a dispatch
naming no ONNX node is matched by its op kind and occurrence. Matched dispatches
are `changed` when their executables' texts differ (the signature: dataflow.py),
or what they compute (op kind, result tensors) does; otherwise `same`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import DataflowGraph, GraphNode

ADDED, REMOVED, CHANGED, SAME = "added", "removed", "changed", "same"


@dataclass
class GraphComparison:
    left: DataflowGraph
    right: DataflowGraph
    pairs: list[tuple[int, int]] = field(default_factory=list)  # (left dispatch, right dispatch)
    left_status: dict[int, str] = field(default_factory=dict)  # removed | changed | same
    right_status: dict[int, str] = field(default_factory=dict)  # added | changed | same

    def right_of(self, left: int) -> int | None:
        return next((r for a, r in self.pairs if a == left), None)

    def left_of(self, right: int) -> int | None:
        return next((a for a, r in self.pairs if r == right), None)

    def counts(self) -> dict[str, int]:
        out = {ADDED: 0, REMOVED: 0, CHANGED: 0, SAME: 0}
        for s in self.left_status.values():
            if s == REMOVED:
                out[REMOVED] += 1
        for s in self.right_status.values():
            out[s] += 1
        return out


def _keys(nodes: list[GraphNode]) -> dict[int, tuple]:
    """Per dispatch: its key at each level (None where it has none): ONNX list, root ONNX node, kind+occurrence."""
    occurrence: dict[str, int] = {}
    out = {}
    for node in nodes:
        n = occurrence.get(node.op_kind, 0)
        occurrence[node.op_kind] = n + 1
        named = bool(node.onnx_nodes)
        out[node.dispatch] = (tuple(node.onnx_nodes) if named else None, node.onnx_nodes[0] if named else None,
                              (node.op_kind, n))
    return out


def compare_graphs(left: DataflowGraph, right: DataflowGraph) -> GraphComparison:
    out = GraphComparison(left, right)
    lefts, rights = left.dispatches(), right.dispatches()
    left_keys, right_keys = _keys(lefts), _keys(rights)
    matched_l: set[int] = set()
    matched_r: set[int] = set()
    for level in range(3):
        free: dict[tuple, list[int]] = {}
        for n in rights:
            key = right_keys[n.dispatch][level]
            if n.dispatch not in matched_r and key is not None:
                free.setdefault(key, []).append(n.dispatch)
        for n in lefts:
            key = left_keys[n.dispatch][level]
            candidates = free.get(key) if n.dispatch not in matched_l and key is not None else None
            if candidates:
                r = candidates.pop(0)
                matched_l.add(n.dispatch)
                matched_r.add(r)
                out.pairs.append((n.dispatch, r))
    out.pairs.sort()
    for a, b in out.pairs:
        status = SAME if _same(left.dispatch_node(a), right.dispatch_node(b)) else CHANGED
        out.left_status[a] = out.right_status[b] = status
    for n in lefts:
        out.left_status.setdefault(n.dispatch, REMOVED)
    for n in rights:
        out.right_status.setdefault(n.dispatch, ADDED)
    return out


def _same(a: GraphNode, b: GraphNode) -> bool:
    return (a.signature == b.signature and a.op_kind == b.op_kind
            and [(t.shape, t.dtype) for t in a.outputs] == [(t.shape, t.dtype) for t in b.outputs])
