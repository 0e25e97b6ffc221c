"""The drawn graph: no node or parameter box on another, no edge across a box, on zoo models.

resnet50 has residual adds (edges that skip layers) and reads a parameter in 49 places;
inception_v2 concatenates four branches and put parameter boxes on dispatches before the fix
(7 pairs), with 134 edge segments across boxes. Checked on what the canvas draws (each
item's bounding rectangle in the scene, ghosts included) and on each edge's polyline.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.graph.build import phase_graph
from npu_studio.core.graph.layout import compute_layout
from npu_studio.core.graph.style import Styler
from npu_studio.ui.graph.canvas import GraphCanvas
from tests.zoo_cache import zoo_workspace

MODELS = ["resnet50", pytest.param("inception_v2", marks=pytest.mark.slow)]
SAMPLES = 50  # points per edge segment checked against the boxes


@pytest.mark.parametrize("name", MODELS)
def test_no_box_on_a_box_and_no_edge_across_one(name, qtbot):
    graph = phase_graph(zoo_workspace(name))
    layout = compute_layout(graph)
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.show_graph(graph, layout, Styler(graph))
    items = [*canvas.items.values(), *getattr(canvas, "ghosts", [])]
    assert len(canvas.items) == len(graph.nodes)
    assert any(n.kind == "parameter" for n in graph.nodes)
    rects = [(item.node.id, item.mapRectToScene(item.boundingRect())) for item in items]
    overlapping = [(a, b) for i, (a, ra) in enumerate(rects) for b, rb in rects[i + 1:] if ra.intersects(rb)]
    assert overlapping == []
    across = []
    for (source, target), pts in layout.routes.items():
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            for node_id, rect in rects:
                inner = rect.adjusted(3, 3, -3, -3)  # the box itself, not the margin around its outline
                if node_id not in (source, target) and any(
                        inner.contains(QtCore.QPointF(x0 + (x1 - x0) * k / SAMPLES, y0 + (y1 - y0) * k / SAMPLES))
                        for k in range(SAMPLES + 1)):
                    across.append((source, target, node_id))
    assert across == []
