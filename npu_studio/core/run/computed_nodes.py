"""The ONNX nodes each dispatch computes, from the names its locations carry and the ONNX graph.

A dispatch's locations name more than it computes: IREE fuses into the dispatch
region's location the location of every op folded into it, so the load of a buffer
another dispatch wrote carries that producer's node (the Relu whose output a Conv
reads, the shortcut Conv a residual Add reads), and a constant or an empty tensor
CSE'd across the model keeps the node of its first user (the first block's
BatchNormalization named in every later block).

The ONNX graph tells them apart. A dispatch's root node is the latest, in graph
order, of the nodes its root op names; it is always kept (a Conv split into a pad
and the convolution is computed by both, a Softmax split into three reductions by
all three). Of the other names, one an earlier dispatch already computes is where a
buffer came from, and a contraction (Conv, MatMul, ...) is not computed beside
another root (a dispatch has at most one): both are dropped, the rest kept (the
elementwise nodes fused after the root, or a producer fused into its consumer).
Names that are no node of the graph (an input's name) are dropped.
"""

from __future__ import annotations

from .onnx_graph import CONTRACTIONS, OnnxGraphOrder


def computed_nodes(records, graph: OnnxGraphOrder) -> dict[int, list[str]]:
    """dispatch index -> the ONNX nodes it computes, in its record's order. Give every record of a phase: a
    dispatch's names are judged against those of the dispatches before it in program order."""
    computed: dict[int, list[str]] = {}
    done: set[str] = set()  # nodes an earlier dispatch computes
    for rec in sorted(records, key=lambda r: r.index):
        names = [n for n in rec.onnx_nodes if n in graph.order]
        roots = [n for n in rec.root_onnx_nodes if n in graph.order] or names
        root = max(roots, key=graph.order.__getitem__) if roots else None
        computed[rec.index] = [n for n in names if n == root or (
            n not in done and graph.op_type[n] not in CONTRACTIONS)]
        done.update(computed[rec.index])
    return computed
