"""Which ONNX tensor a dispatch computes: its provenance, read against the ONNX graph.

A dispatch's locations name the ONNX nodes fused into it (the dispatch
index's `onnx_nodes`). The tensor it computes is the output of the last of
those nodes in the graph's order whose tensor has as many elements as the
dispatch's result: IREE folds a node's trailing reshapes and unit dims
away, so the shapes may differ while the data (row-major) is the same.
A dispatch that writes its result into a padded buffer (a convolution's
padded input, produced by the dispatch before it) is paired with the
tensor whose every dim it exceeds by an even amount, and compared on the
interior (padding split evenly between both sides, as ONNX pads).
Nodes named only because a weight or a shared constant came from them
are earlier in the graph, so they never win over the node that finishes
the dispatch. Nodes named only because the dispatch converts an input of
theirs (a demoted build casts a matmul's operands in the producer's
dispatch) are left out: when the index names the root op's nodes, only
those and the non-contraction nodes they feed (through the dispatch's own
nodes) are candidates. A dispatch that only converts element types
computes no ONNX node and is not paired. Pairing looks at names and shapes only, never at values:
a dispatch that computes something else is reported as departing, not
re-paired with whatever it happens to match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Pairing:
    tensor: str | None  # the ONNX tensor the result is compared with
    node: str | None  # the node that outputs it
    why_not: str = ""  # when `tensor` is None: why no tensor was paired
    # A padded result: its shape without unit dims, and the slices of it that hold the tensor.
    interior: tuple[tuple[int, ...], tuple[slice, ...]] | None = None

    def view(self, result, reference):
        """(the part of `result` that is the tensor, `reference` in the same shape)."""
        if self.interior is None:
            return result, reference.reshape(result.shape)
        shape, window = self.interior
        inner = result.reshape(shape)[window]
        return inner, reference.reshape(inner.shape)


def padded_interior(result_shape, tensor_shape) -> tuple[tuple[int, ...], tuple[slice, ...]] | None:
    """The window of a result padded evenly around a tensor, or None when it is not such a result."""
    r = tuple(d for d in result_shape if d != 1)
    t = tuple(d for d in tensor_shape if d != 1)
    if len(r) != len(t) or r == t:
        return None
    pads = [a - b for a, b in zip(r, t)]
    if any(p < 0 or p % 2 for p in pads):
        return None
    return r, tuple(slice(p // 2, p // 2 + n) for p, n in zip(pads, t))


# ONNX ops a dispatch has at most one of (its root): another one named in its
# locations was fused only by a conversion of its operand.
CONTRACTIONS = frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "QLinearMatMul",
                          "QLinearConv", "ConvInteger", "Einsum"})


class OnnxGraphOrder:
    """Node order, ops and dataflow of an ONNX graph (the imported model, node names as in the MLIR)."""

    def __init__(self, model):
        self.order: dict[str, int] = {}
        self.outputs: dict[str, list[str]] = {}
        self.op_type: dict[str, str] = {}
        self.consumers: dict[str, list[str]] = {}  # tensor -> nodes reading it
        for i, node in enumerate(model.graph.node):
            self.order[node.name] = i
            self.outputs[node.name] = [o for o in node.output if o]
            self.op_type[node.name] = node.op_type
            for t in node.input:
                self.consumers.setdefault(t, []).append(node.name)

    def computed_by(self, nodes: list[str], roots: list[str]) -> list[str]:
        """The nodes a dispatch computes: its root's nodes and the non-contractions they feed within `nodes`."""
        inside = set(nodes)
        start = [r for r in roots if r in inside and r in self.order]
        if not start:
            return list(nodes)
        found, stack = set(start), list(start)
        while stack:
            for t in self.outputs.get(stack.pop(), []):
                for c in self.consumers.get(t, []):
                    if c in inside and c not in found and self.op_type.get(c) not in CONTRACTIONS:
                        found.add(c)
                        stack.append(c)
        return [n for n in nodes if n in found]

    def candidates(self, nodes: list[str]) -> list[tuple[str, str]]:
        """(node, tensor) for every output of `nodes` that the graph has, the last node first."""
        known = sorted((n for n in set(nodes) if n in self.order), key=self.order.__getitem__, reverse=True)
        return [(n, t) for n in known for t in self.outputs[n]]

    def tensors(self, nodes: list[str]) -> list[str]:
        return [t for _, t in self.candidates(nodes)]


def dispatch_nodes(rec, graph: OnnxGraphOrder) -> list[str]:
    """The ONNX nodes a dispatch record computes (see the module's docstring); [] for a pure conversion."""
    if rec is None:
        return []
    root = rec.root
    if root is not None and root.kind == "elementwise" and not root.body_ops and not rec.fused:
        return []  # only converts element types (a demoted build's casts)
    return graph.computed_by(list(rec.onnx_nodes), list(rec.root_onnx_nodes))


def pair_results(result_shapes: list[tuple[int, ...]], nodes: list[str], graph: OnnxGraphOrder,
                 shapes: dict[str, tuple[int, ...]]) -> list[Pairing]:
    """One pairing per dispatch result; `shapes` are the ONNX tensors' shapes (from onnxruntime's values)."""
    if not nodes:
        return [Pairing(None, None, "it computes no ONNX node (no node in its locations, or it only "
                                    "converts element types)")] * len(result_shapes)
    candidates = graph.candidates(nodes)
    if not candidates:
        return [Pairing(None, None, f"the ONNX graph has none of its nodes ({', '.join(nodes[:3])})")] \
            * len(result_shapes)
    taken: set[str] = set()
    out = []
    for shape in result_shapes:
        size = math.prod(shape)
        free = [(n, t) for n, t in candidates if t not in taken and t in shapes]
        match = next((Pairing(t, n) for n, t in free if math.prod(shapes[t]) == size), None)
        if match is None:
            match = next((Pairing(t, n, interior=w) for n, t in free
                          if (w := padded_interior(shape, shapes[t])) is not None), None)
        if match is None:
            last = candidates[0][0]
            out.append(Pairing(None, None, f"no output of its ONNX nodes has {size} elements "
                                           f"({'x'.join(map(str, shape)) or 'scalar'}; last node {last})"))
        else:
            taken.add(match.tensor)
            out.append(match)
    return out
