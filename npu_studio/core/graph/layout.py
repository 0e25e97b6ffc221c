"""A layered (Sugiyama) layout of a dataflow graph, and its cache in the workspace.

Why grandalf: it is pure Python (a plain `pip install` lays out, no Graphviz
binary to find or ship, and nothing native to crash the app's worker thread), its
Sugiyama layout routes long edges through dummy vertices like `dot` does, and it
lays out 2,000 dispatches in seconds, which the cache then saves every time after.
Graphviz `dot` would be faster but is a system package pip cannot provide.

Parameters are not layered: a weight read by one deep dispatch would sit on the
top layer with an edge across the whole graph. Each is placed beside the first
dispatch that reads it instead. Components are laid out one by one, side by side.

The result is plain data (boxes and edge polylines in scene units, y downwards);
the view and the SVG export draw the same numbers.
"""

from __future__ import annotations

import hashlib
import math
import json
from dataclasses import dataclass, field
from pathlib import Path

from .dataflow import DISPATCH, PARAMETER
from .model import DataflowGraph

LAYOUT_VERSION = 2  # 2: edges end on the boxes
NODE_W, NODE_H = 180.0, 40.0
TERMINAL_W, TERMINAL_H = 150.0, 28.0
PARAM_W, PARAM_H = 120.0, 22.0
LAYER_GAP, NODE_GAP, COMPONENT_GAP = 40.0, 24.0, 60.0
DUMMY_W = 4.0
SWEEPS = 2  # crossing-reduction sweeps: more barely helps past two, and costs seconds at 2,000 nodes


@dataclass
class Layout:
    boxes: dict[str, tuple[float, float, float, float]]  # node id -> (centre x, centre y, width, height)
    routes: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)  # edge -> polyline
    key: str = ""

    def bounds(self) -> tuple[float, float, float, float]:
        if not self.boxes:
            return 0.0, 0.0, 0.0, 0.0
        xs0 = min(x - w / 2 for x, _, w, _ in self.boxes.values())
        ys0 = min(y - h / 2 for _, y, _, h in self.boxes.values())
        xs1 = max(x + w / 2 for x, _, w, _ in self.boxes.values())
        ys1 = max(y + h / 2 for _, y, _, h in self.boxes.values())
        return xs0, ys0, xs1, ys1

    def to_json(self) -> dict:
        return {"version": LAYOUT_VERSION, "key": self.key,
                "boxes": {k: list(v) for k, v in self.boxes.items()},
                "routes": [[s, t, [list(p) for p in pts]] for (s, t), pts in self.routes.items()]}

    @classmethod
    def from_json(cls, data: dict) -> "Layout":
        """The layout a cache file holds; ValueError for anything else (wrong shapes, NaN, infinities),
        which the cache treats as unreadable and recomputes."""
        try:
            boxes = {str(k): tuple(float(x) for x in v) for k, v in data["boxes"].items()}
            routes = {(str(s), str(t)): [(float(p[0]), float(p[1])) for p in pts] for s, t, pts in data["routes"]}
        except (AttributeError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not a layout: {exc}") from None
        numbers = [x for box in boxes.values() for x in box] + [x for pts in routes.values() for p in pts for x in p]
        if any(len(box) != 4 for box in boxes.values()) or not all(math.isfinite(x) for x in numbers):
            raise ValueError("not a layout: a box is not four finite numbers")
        return cls(boxes, routes, str(data.get("key", "")))


def node_size(kind: str) -> tuple[float, float]:
    if kind == DISPATCH:
        return NODE_W, NODE_H
    return (PARAM_W, PARAM_H) if kind == PARAMETER else (TERMINAL_W, TERMINAL_H)


def layout_key(graph: DataflowGraph) -> str:
    """What the layout depends on: nodes, their kinds and the edges (not labels or overlays)."""
    h = hashlib.sha256(f"v{LAYOUT_VERSION}".encode())
    for n in graph.nodes:
        h.update(f"{n.id}|{n.kind}\n".encode())
    for e in graph.edges:
        h.update(f"{e.source}>{e.target}\n".encode())
    return h.hexdigest()[:24]


def compute_layout(graph: DataflowGraph) -> Layout:
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    class _Box:  # what grandalf reads (w, h) and writes (xy)
        def __init__(self, w, h):
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    class _Path:
        def __init__(self):
            self.points = []

        def setpath(self, pts):
            self.points = [tuple(p) for p in pts]

    layered = [n for n in graph.nodes if n.kind != PARAMETER]
    vertices = {}
    for n in layered:
        v = Vertex(n.id)
        v.view = _Box(*node_size(n.kind))
        vertices[n.id] = v
    edges = []
    for e in graph.edges:
        if e.source in vertices and e.target in vertices and e.source != e.target:
            edge = Edge(vertices[e.source], vertices[e.target])
            edge.view = _Path()
            edges.append(edge)
    g = Graph(list(vertices.values()), edges)
    boxes: dict[str, tuple[float, float, float, float]] = {}
    routes: dict[tuple[str, str], list[tuple[float, float]]] = {}
    x_offset = 0.0
    for component in g.C:
        sug = SugiyamaLayout(component)
        sug.xspace, sug.yspace = NODE_GAP, LAYER_GAP
        sug.dw, sug.dh = DUMMY_W, DUMMY_W  # a long edge passing a layer: narrow (the default is a node's size)
        sug.init_all()
        sug.draw(SWEEPS)
        xs = [v.view.xy[0] - v.view.w / 2 for v in component.sV]
        shift = x_offset - min(xs)
        right = x_offset
        for v in component.sV:
            x, y = v.view.xy
            boxes[v.data] = (x + shift, y, v.view.w, v.view.h)
            right = max(right, x + shift + v.view.w / 2)
        for e in component.sE:
            pts = [(x + shift, y) for x, y in (e.view.points or [e.v[0].view.xy, e.v[1].view.xy])]
            routes[(e.v[0].data, e.v[1].data)] = _clipped(pts, e.v[0].view, e.v[1].view)
        x_offset = right + COMPONENT_GAP
    _place_parameters(graph, boxes, routes)
    return Layout(boxes, routes, layout_key(graph))


def _clipped(pts, source, target) -> list[tuple[float, float]]:
    """From the source's bottom edge to the target's top edge (an arrowhead shows where it enters)."""
    if len(pts) < 2:
        return pts
    down = pts[-1][1] >= pts[0][1]
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return [(x0, y0 + (source.h / 2 if down else -source.h / 2)), *pts[1:-1],
            (x1, y1 - (target.h / 2 if down else -target.h / 2))]


def _place_parameters(graph: DataflowGraph, boxes, routes) -> None:
    """Each parameter left of the first dispatch reading it, stacked when several share one."""
    stacked: dict[str, int] = {}
    for e in graph.edges:
        src = graph.node(e.source)
        if src is None or src.kind != PARAMETER or e.target not in boxes:
            continue
        if e.source not in boxes:
            x, y, w, h = boxes[e.target]
            k = stacked.get(e.target, 0)
            stacked[e.target] = k + 1
            boxes[e.source] = (x - w / 2 - NODE_GAP - PARAM_W / 2, y - h / 2 + PARAM_H / 2 + k * (PARAM_H + 4),
                               PARAM_W, PARAM_H)
        px, py, pw, _ = boxes[e.source]
        tx, ty, tw, _ = boxes[e.target]
        routes[(e.source, e.target)] = [(px + pw / 2, py), (tx - tw / 2, ty)]
    for n in graph.nodes:  # read by nothing: in a column of their own
        if n.kind == PARAMETER and n.id not in boxes:
            x0, y0, x1, y1 = Layout(boxes).bounds()
            boxes[n.id] = (x1 + COMPONENT_GAP + PARAM_W / 2, y0 + PARAM_H / 2, PARAM_W, PARAM_H)


def cache_path(ws_root: Path, key: str) -> Path:
    return Path(ws_root) / "graph" / f"layout-{key}.json"


def cached_layout(graph: DataflowGraph, ws_root: Path | None) -> Layout:
    """The layout from the workspace's cache, or computed and kept there (a failed write is no error:
    it is a cache). The cache is keyed by the graph's structure, so an edit or a new build misses it."""
    key = layout_key(graph)
    path = cache_path(ws_root, key) if ws_root is not None else None
    if path is not None and path.is_file():
        try:
            layout = Layout.from_json(json.loads(path.read_text(encoding="utf-8")))
            if layout.key == key and set(layout.boxes) == {n.id for n in graph.nodes}:
                return layout
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            pass  # unreadable: computed again and rewritten
    layout = compute_layout(graph)
    if path is not None:
        from ..workspace.confine import write_text_inside
        from ..errors import StudioError

        try:
            write_text_inside(ws_root, path, json.dumps(layout.to_json(), separators=(",", ":")))
        except (OSError, StudioError):
            pass
    return layout
