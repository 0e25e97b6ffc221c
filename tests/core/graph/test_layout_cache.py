"""A damaged layout cache in a workspace is recomputed, never a traceback or an invalid SVG (found by the
fresh-eyes check: a string, a two-number box or a NaN box used to reach the SVG)."""

from __future__ import annotations

import json
import math

import pytest

from npu_studio.core.graph.layout import Layout, cached_layout, cache_path, compute_layout, layout_key
from npu_studio.core.graph.dataflow import Tensor
from npu_studio.core.graph.model import DataflowGraph, GraphEdge, GraphNode


def small_graph() -> DataflowGraph:
    t = Tensor("%0", (1, 4), "f32")
    nodes = [GraphNode("input:0", "input", "x"), GraphNode("dispatch:0", "dispatch", "#0", dispatch=0),
             GraphNode("output:0", "output", "y")]
    edges = [GraphEdge("input:0", "dispatch:0", t), GraphEdge("dispatch:0", "output:0", t)]
    return DataflowGraph("flow", "main", nodes, edges)


@pytest.mark.parametrize("boxes", ["x", [], {"dispatch:0": [1, 2]}, {"dispatch:0": [0, 0, "NaN", 1]},
                                   {"dispatch:0": [0, 0, float("inf"), 1]}])
def test_a_damaged_cache_is_computed_again(tmp_path, boxes):
    graph = small_graph()
    key = layout_key(graph)
    path = cache_path(tmp_path, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 2, "key": key, "boxes": boxes, "routes": []}))
    layout = cached_layout(graph, tmp_path)
    fresh = compute_layout(graph)
    assert set(layout.boxes) == {n.id for n in graph.nodes} == set(fresh.boxes)
    assert all(len(b) == 4 and all(math.isfinite(x) for x in b) for b in layout.boxes.values())
    assert Layout.from_json(json.loads(path.read_text())).boxes == layout.boxes  # the cache was rewritten


@pytest.mark.parametrize("box", [[1e308, 1e308, 1e308, 1e308], [1e9, 1e9, 180, 40], [0, 0, -5, -5], [0, 0, 0, 0]])
def test_a_cache_with_absurd_but_finite_numbers_is_computed_again(tmp_path, box):
    """Every node present, every number finite, yet a box a billion units away or of no size: the SVG
    was 1.5e308 units wide (found by eyes39). The truth is a fresh layout of the same graph."""
    graph = small_graph()
    fresh = compute_layout(graph)
    fresh.key = layout_key(graph)
    data = fresh.to_json()
    data["boxes"]["dispatch:0"] = box
    path = cache_path(tmp_path, fresh.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    assert cached_layout(graph, tmp_path).boxes == fresh.boxes
