"""A layered (Sugiyama) layout of a dataflow graph, and its cache in the workspace.

Why grandalf: it is pure Python (a plain `pip install` lays out, no Graphviz
binary to find or ship, and nothing native to crash the app's worker thread), its
Sugiyama layout routes long edges through dummy vertices like `dot` does, and it
lays out 2,000 dispatches in seconds, which the cache then saves every time after.
Graphviz `dot` would be faster but is a system package pip cannot provide.

Parameters are not layered: a weight read by one deep dispatch would sit on the
top layer with an edge across the whole graph, and one read by sixty (densenet's
hoisted constants) would pull sixty edges across it. Each is drawn beside every
node that reads it, in a column the layout reserves on that node's left (the
node's layout vertex is made wider and taller by it), so no box lands on another
box or on an edge. The first drawing is the parameter's box; the others are
`ghosts`, copies Netron-style. A parameter nothing reads gets a column of its own.
Components are laid out one by one, side by side.

The result is plain data (boxes and edge polylines in scene units, y downwards);
the view and the SVG export draw the same numbers.
"""

from __future__ import annotations

import hashlib
import math
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .dataflow import DISPATCH, PARAMETER
from .model import DataflowGraph

LAYOUT_VERSION = 3  # 2: edges end on the boxes; 3: parameters in columns reserved beside their readers
NODE_W, NODE_H = 180.0, 40.0
TERMINAL_W, TERMINAL_H = 150.0, 36.0  # two lines of text
PARAM_W, PARAM_H = 120.0, 22.0
LAYER_GAP, NODE_GAP, COMPONENT_GAP = 40.0, 24.0, 60.0
PARAM_GAP = 4.0  # between parameters stacked in one column
DUMMY_W = 4.0
# grandalf keeps state on its classes (Tarjan's counter, `Vertex.ncur`): two layouts at once in two
# threads (the graph rebuilt while the last build still runs) raised AttributeError. One at a time.
_LAYING_OUT = threading.RLock()  # held by cached_layout too: the later build reads the cache
# No layout this code computes comes near it (a 2,000-dispatch chain is ~2e5 units tall): a cache
# beyond it is damaged, and drawing it would make a scene or an SVG 1e308 units wide.
MAX_EXTENT = 1e7
SWEEPS = 2  # crossing-reduction sweeps: more barely helps past two, and costs seconds at 2,000 nodes


@dataclass
class Layout:
    boxes: dict[str, tuple[float, float, float, float]]  # node id -> (centre x, centre y, width, height)
    routes: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)  # edge -> polyline
    key: str = ""
    # A parameter drawn again beside another node reading it: (parameter id, box)
    ghosts: list[tuple[str, tuple[float, float, float, float]]] = field(default_factory=list)

    def all_boxes(self) -> list[tuple[str, tuple[float, float, float, float]]]:
        """Every box drawn: each node's, then the ghosts."""
        return [*self.boxes.items(), *self.ghosts]

    def bounds(self) -> tuple[float, float, float, float]:
        drawn = [box for _, box in self.all_boxes()]
        if not drawn:
            return 0.0, 0.0, 0.0, 0.0
        xs0 = min(x - w / 2 for x, _, w, _ in drawn)
        ys0 = min(y - h / 2 for _, y, _, h in drawn)
        xs1 = max(x + w / 2 for x, _, w, _ in drawn)
        ys1 = max(y + h / 2 for _, y, _, h in drawn)
        return xs0, ys0, xs1, ys1

    def to_json(self) -> dict:
        return {"version": LAYOUT_VERSION, "key": self.key,
                "boxes": {k: list(v) for k, v in self.boxes.items()},
                "routes": [[s, t, [list(p) for p in pts]] for (s, t), pts in self.routes.items()],
                "ghosts": [[k, list(v)] for k, v in self.ghosts]}

    @classmethod
    def from_json(cls, data: dict) -> "Layout":
        """The layout a cache file holds; ValueError for anything else (wrong shapes, NaN, infinities),
        which the cache treats as unreadable and recomputes."""
        try:
            boxes = {str(k): tuple(float(x) for x in v) for k, v in data["boxes"].items()}
            routes = {(str(s), str(t)): [(float(p[0]), float(p[1])) for p in pts] for s, t, pts in data["routes"]}
            ghosts = [(str(k), tuple(float(x) for x in v)) for k, v in data.get("ghosts", [])]
        except (AttributeError, KeyError, TypeError, IndexError, ValueError) as exc:
            raise ValueError(f"not a layout: {exc}") from None
        drawn = [*boxes.values(), *(box for _, box in ghosts)]
        numbers = [x for box in drawn for x in box] + [x for pts in routes.values() for p in pts for x in p]
        if any(len(box) != 4 for box in drawn) or not all(math.isfinite(x) for x in numbers):
            raise ValueError("not a layout: a box is not four finite numbers")
        if any(abs(x) > MAX_EXTENT for x in numbers) or any(w <= 0 or h <= 0 for _, _, w, h in drawn):
            raise ValueError(f"not a layout: a box of no size or beyond {MAX_EXTENT:g} units")
        return cls(boxes, routes, str(data.get("key", "")), ghosts)


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
    with _LAYING_OUT:
        return _compute_layout(graph)


def _compute_layout(graph: DataflowGraph) -> Layout:
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
    params = _parameters_read(graph)
    vertices = {}
    for n in layered:
        v = Vertex(n.id)
        v.view = _Box(*_reserved(node_size(n.kind), len(params.get(n.id, []))))
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
            w, h = node_size(graph.node(v.data).kind)
            boxes[v.data] = (x + shift + (v.view.w - w) / 2, y, w, h)  # right of its parameters' column
            right = max(right, x + shift + v.view.w / 2)
        half: dict[float, float] = {}  # a layer's y -> half its height
        for v in component.sV:
            half[v.view.xy[1]] = max(half.get(v.view.xy[1], 0.0), v.view.h / 2)
        for e in component.sE:
            pts = [(x + shift, y) for x, y in (e.view.points or [e.v[0].view.xy, e.v[1].view.xy])]
            pts = [pts[0], *_through_layers(pts[1:-1], half), pts[-1]] if len(pts) > 2 else pts
            routes[(e.v[0].data, e.v[1].data)] = _clipped(pts, boxes[e.v[0].data], boxes[e.v[1].data])
        x_offset = right + COMPONENT_GAP
    layout = Layout(boxes, routes, layout_key(graph))
    _place_parameters(graph, params, layout)
    return layout


def _parameters_read(graph: DataflowGraph) -> dict[str, list[str]]:
    """Node id -> the parameters it reads, in edge order."""
    out: dict[str, list[str]] = {}
    for e in graph.edges:
        src = graph.node(e.source)
        if src is not None and src.kind == PARAMETER and e.source not in out.get(e.target, []):
            out.setdefault(e.target, []).append(e.source)
    return out


def _reserved(size: tuple[float, float], params: int) -> tuple[float, float]:
    """A node's layout vertex: the node, and left of it a column for the `params` parameters it reads."""
    w, h = size
    if not params:
        return w, h
    return w + NODE_GAP + PARAM_W, max(h, params * (PARAM_H + PARAM_GAP) - PARAM_GAP)


def _through_layers(bends, half: dict[float, float]) -> list[tuple[float, float]]:
    """A long edge's bends (its dummy vertices, one per layer it passes) as vertical runs the height of
    their layer: straight through the gap the layout left between that layer's boxes, never across a
    box's corner (the slanted parts stay between layers)."""
    out = []
    for x, y in bends:
        h = half.get(y, 0.0)
        out += [(x, y - h), (x, y + h)] if h else [(x, y)]
    return out


def _clipped(pts, source, target) -> list[tuple[float, float]]:
    """From the source box's bottom edge to the target box's top edge, at their centres (an arrowhead
    shows where it enters); boxes are (centre x, centre y, w, h)."""
    if len(pts) < 2:
        return pts
    down = pts[-1][1] >= pts[0][1]
    (sx, sy, _, sh), (tx, ty, _, th) = source, target
    return [(sx, sy + (sh / 2 if down else -sh / 2)), *pts[1:-1], (tx, ty - (th / 2 if down else -th / 2))]


def _place_parameters(graph: DataflowGraph, params: dict[str, list[str]], layout: Layout) -> None:
    """Each parameter in the column left of every node reading it (the first drawing its box, the others
    ghosts), with a short edge into the reader's left side; unread ones in a column right of it all."""
    boxes = layout.boxes
    for node in graph.nodes:  # graph order: a parameter's box beside its first reader
        read = params.get(node.id, [])
        if not read or node.id not in boxes:
            continue
        x, y, w, h = boxes[node.id]
        px = x - w / 2 - NODE_GAP - PARAM_W / 2
        top = y - (len(read) * (PARAM_H + PARAM_GAP) - PARAM_GAP) / 2
        for k, pid in enumerate(read):
            py = top + PARAM_H / 2 + k * (PARAM_H + PARAM_GAP)
            box = (px, py, PARAM_W, PARAM_H)
            if pid in boxes:
                layout.ghosts.append((pid, box))
            else:
                boxes[pid] = box
            enter = min(max(py, y - h / 2 + 4), y + h / 2 - 4)  # into the reader's side, however tall the stack
            layout.routes[(pid, node.id)] = [(px + PARAM_W / 2, py), (x - w / 2, enter)]
    unread = [n for n in graph.nodes if n.id not in boxes]
    if unread:
        _, y0, x1, _ = layout.bounds()
        for k, n in enumerate(unread):
            w, h = node_size(n.kind)
            boxes[n.id] = (x1 + COMPONENT_GAP + w / 2, y0 + h / 2 + k * (h + NODE_GAP / 2), w, h)


def cache_path(ws_root: Path, key: str) -> Path:
    return Path(ws_root) / "graph" / f"layout-{key}.json"


def cached_layout(graph: DataflowGraph, ws_root: Path | None) -> Layout:
    """The layout from the workspace's cache, or computed and kept there (a failed write is no error:
    it is a cache). The cache is keyed by the graph's structure, so an edit or a new build misses it."""
    with _LAYING_OUT:
        return _cached_layout(graph, ws_root)


def _cached_layout(graph: DataflowGraph, ws_root: Path | None) -> Layout:
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
