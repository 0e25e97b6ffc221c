"""Graph view speed: a generated 2,000-dispatch graph laid out, cached, painted, panned and zoomed;
light densenet121's graph laid out from scratch.

    QT_QPA_PLATFORM=offscreen python benchmarks/graph_layout.py [DENSENET_WORKSPACE]

Without a workspace densenet121 is compiled into a temporary folder first. Prints one line per figure
(results: docs/PERFORMANCE.md, "Graph view").
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npu_studio.core.graph.dataflow import DISPATCH, INPUT, OUTPUT, Tensor, node_id  # noqa: E402
from npu_studio.core.graph.layout import cached_layout  # noqa: E402
from npu_studio.core.graph.model import DataflowGraph, GraphEdge, GraphNode  # noqa: E402

N = 2000
KINDS = ("conv", "matmul", "elementwise", "pooling", "reduction", "pad")


def generated(n: int = N, seed: int = 0) -> DataflowGraph:
    """A chain of n dispatches with residual skips and two-way branches, like a deep CNN's."""
    rng = random.Random(seed)
    t = Tensor("%x", (1, 64, 56, 56), "f32")
    nodes = [GraphNode(node_id(INPUT, 0), INPUT, "input", outputs=[t])]
    edges = [GraphEdge(node_id(INPUT, 0), node_id(DISPATCH, 0), t)]
    for i in range(n):
        nodes.append(GraphNode(node_id(DISPATCH, i), DISPATCH, f"#{i}", i, rng.choice(KINDS), f"@d{i}",
                               [Tensor(f"%{i}", (1, 64, 56, 56), "f32")], [f"node_{i}"], f"{i:016x}",
                               {"cycles": rng.randint(100, 10**6)}))
        if i:
            edges.append(GraphEdge(node_id(DISPATCH, i - 1), node_id(DISPATCH, i), t))
        if i > 3 and rng.random() < 0.3:  # a skip over 2 to 4 dispatches
            edges.append(GraphEdge(node_id(DISPATCH, i - rng.randint(2, 4)), node_id(DISPATCH, i), t))
    nodes.append(GraphNode(node_id(OUTPUT, 0), OUTPUT, "output", outputs=[t]))
    edges.append(GraphEdge(node_id(DISPATCH, n - 1), node_id(OUTPUT, 0), t))
    graph = DataflowGraph("flow", "main", nodes, edges)
    graph.overlays["cycles"] = {"title": "Simulated cycles", "unit": "cycles"}
    return graph


def paint_figures(graph, layout) -> dict[str, float]:
    from PySide6 import QtCore, QtWidgets

    from npu_studio.core.graph.style import Styler
    from npu_studio.ui.graph.canvas import GraphCanvas

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    canvas = GraphCanvas()
    canvas.resize(1200, 800)
    canvas.show()
    app.processEvents()
    t0 = time.perf_counter()
    canvas.show_graph(graph, layout, Styler(graph, "cycles"))
    canvas.viewport().repaint()
    app.processEvents()
    first_paint = time.perf_counter() - t0

    def frame(action) -> float:
        t = time.perf_counter()
        action()
        canvas.viewport().repaint()  # synchronous: the frame is drawn when it returns
        return time.perf_counter() - t

    pans = [frame(lambda: canvas.verticalScrollBar().setValue(canvas.verticalScrollBar().value() + 120))
            for _ in range(60)]
    canvas.highlight(N // 2)
    zooms = [frame(lambda k=k: canvas.zoom(1.15 if k % 20 < 10 else 1 / 1.15)) for k in range(60)]
    canvas.zoom(0.1)
    zoomed_out = [frame(lambda: canvas.verticalScrollBar().setValue(canvas.verticalScrollBar().value() + 40))
                  for _ in range(20)]
    canvas.close()
    del QtCore
    return {"first_paint": first_paint, "pan_p50": statistics.median(pans), "pan_max": max(pans),
            "zoom_p50": statistics.median(zooms), "zoom_max": max(zooms),
            "overview_pan_p50": statistics.median(zoomed_out), "overview_pan_max": max(zoomed_out)}


def main() -> None:
    graph = generated()
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        cached_layout(graph, Path(folder))
        scratch = time.perf_counter() - t
        t = time.perf_counter()
        layout = cached_layout(graph, Path(folder))  # from the cache file
        cached = time.perf_counter() - t
        figures = paint_figures(graph, layout)
    print(f"generated: {len(graph.dispatches())} dispatches, {len(graph.edges)} edges")
    print(f"  layout from scratch {scratch:.2f} s, from the cache {cached * 1000:.0f} ms")
    print(f"  cached layout + first paint {cached + figures['first_paint']:.3f} s "
          f"(first paint {figures['first_paint'] * 1000:.0f} ms)")
    for k in ("pan", "zoom", "overview_pan"):
        print(f"  {k} frame median {figures[k + '_p50'] * 1000:.1f} ms, worst {figures[k + '_max'] * 1000:.1f} ms")
    densenet(sys.argv[1] if len(sys.argv) > 1 else None)


def densenet(root: str | None) -> None:
    from npu_studio.core.graph.build import phase_graph
    from npu_studio.core.graph.layout import compute_layout
    from npu_studio.core.workspace.workspace import Workspace, compile_model

    if root is None:
        import onnx

        model = Path(onnx.__file__).parent / "backend/test/data/light/light_densenet121.onnx"
        root = tempfile.mkdtemp(prefix="graph-bench-")
        ws = compile_model(model, Path(root) / "ws")
    else:
        ws = Workspace.open(Path(root))
    t = time.perf_counter()
    graph = phase_graph(ws)
    built = time.perf_counter() - t
    t = time.perf_counter()
    compute_layout(graph)
    laid = time.perf_counter() - t
    print(f"densenet121: {len(graph.dispatches())} dispatches, {len(graph.edges)} edges; graph built in "
          f"{built:.2f} s (index + flow parse), laid out from scratch in {laid:.2f} s")


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    main()
