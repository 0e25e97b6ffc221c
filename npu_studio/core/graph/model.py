"""The dataflow graph of one build's phase, as data: nodes, edges, overlays, and its JSON form.

Schema: docs/graph.schema.json (tests validate `to_json` against it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dataflow import DISPATCH, Tensor

SCHEMA_VERSION = 1


@dataclass
class GraphNode:
    id: str  # "dispatch:12", "input:0", "output:0", "parameter:<global>"
    kind: str  # dispatch | input | output | parameter
    label: str
    dispatch: int | None = None  # the flow-linked dispatch index (the same number in every phase)
    op_kind: str = ""  # the root op's kind (conv, matmul, ...) or the data it moves
    symbol: str = ""  # the export it calls
    outputs: list[Tensor] = field(default_factory=list)  # what the node produces
    onnx_nodes: list[str] = field(default_factory=list)  # the ONNX nodes it computes (run/computed_nodes)
    signature: str = ""  # digest of its executable's text (equal texts, equal digests)
    overlay: dict = field(default_factory=dict)  # kind -> value (see overlays.py)

    def search_text(self) -> str:
        """What search matches: number, op kind, symbol, ONNX node names, tensor names."""
        parts = [self.label, self.op_kind, self.symbol, *self.onnx_nodes, *(t.name for t in self.outputs)]
        if self.dispatch is not None:
            parts.append(f"#{self.dispatch}")
        return "\n".join(parts).lower()


@dataclass
class GraphEdge:
    source: str
    target: str
    tensor: Tensor


@dataclass
class DataflowGraph:
    phase: str
    build: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    overlays: dict[str, dict] = field(default_factory=dict)  # kind -> {"title", "unit", "notes"}
    notes: list[str] = field(default_factory=list)  # what could not be shown, and why

    def node(self, node_id: str) -> GraphNode | None:
        return self._by_id().get(node_id)

    def dispatch_node(self, index: int) -> GraphNode | None:
        return self._by_id().get(f"{DISPATCH}:{index}")

    def _by_id(self) -> dict[str, GraphNode]:
        cached = self.__dict__.get("_ids")
        if cached is None or len(cached) != len(self.nodes):
            cached = {n.id: n for n in self.nodes}
            self.__dict__["_ids"] = cached
        return cached

    def dispatches(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.kind == DISPATCH]

    def search(self, text: str) -> list[GraphNode]:
        """Nodes matching `text`: `#12` or `12` is dispatch 12; otherwise a case-blind substring."""
        text = text.strip().lower()
        if not text:
            return []
        number = text.lstrip("#")
        if number.isdigit():
            found = self.dispatch_node(int(number))
            if found is not None:
                return [found]
        return [n for n in self.nodes if text in n.search_text()]

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "phase": self.phase,
            "build": self.build,
            "overlays": self.overlays,
            "notes": list(self.notes),
            "nodes": [_node_json(n) for n in self.nodes],
            "edges": [{"source": e.source, "target": e.target, "tensor": _tensor_json(e.tensor)}
                      for e in self.edges],
        }


def _tensor_json(t: Tensor) -> dict:
    return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype}


def _node_json(n: GraphNode) -> dict:
    return {
        "id": n.id, "kind": n.kind, "label": n.label, "dispatch": n.dispatch, "op_kind": n.op_kind,
        "symbol": n.symbol, "outputs": [_tensor_json(t) for t in n.outputs], "onnx_nodes": list(n.onnx_nodes),
        "signature": n.signature, "overlay": dict(n.overlay),
    }
