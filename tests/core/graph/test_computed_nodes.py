"""Which ONNX nodes a graph's dispatch lists, and what its outputs are called, against the ONNX model.

Truth: the ONNX graph, walked here (not with the product's OnnxGraphOrder), its nodes named as the
importer names them (`imported_model`: the names IREE's locations carry).
IREE fuses elementwise consumers into a convolution's dispatch, never another convolution, and in
these f32 CNNs nothing upstream of the convolution (its input is another dispatch's result): so a
dispatch lists at most one Conv, every Conv is listed by exactly one conv dispatch (a pad dispatch
may name it too, holding its padding), and a conv dispatch lists nothing upstream of its Conv.
Before the fix densenet121's dispatch 7 listed Conv n29 with Conv n14 and Relu n28 (where the
buffers it reads came from), resnet50's dispatch 6 its own Conv n10 and the shortcut Conv n12.
"""

from __future__ import annotations

import onnx
import pytest

from npu_studio.core.graph.build import phase_graph
from npu_studio.core.run.onnx_reference import imported_model
from tests.zoo_cache import zoo_model, zoo_workspace

MODELS = ["resnet50", pytest.param("densenet121", marks=pytest.mark.slow)]


def _onnx(name: str):
    """node name -> (op type, input tensors), tensor -> producing node, and the graph's output names."""
    graph = imported_model(zoo_model(name)).graph
    nodes, producer = {}, {}
    for node in graph.node:
        nodes[node.name] = (node.op_type, list(node.input))
        for t in node.output:
            producer[t] = node.name
    return nodes, producer, [o.name for o in onnx.load(str(zoo_model(name))).graph.output]


def _upstream(node: str, nodes, producer) -> set[str]:
    seen, stack = set(), [node]
    while stack:
        for t in nodes[stack.pop()][1]:
            p = producer.get(t)
            if p is not None and p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


@pytest.mark.parametrize("name", MODELS)
def test_a_dispatch_lists_the_onnx_nodes_it_computes(name):
    nodes, producer, _ = _onnx(name)
    graph = phase_graph(zoo_workspace(name))
    convs = [n for n in nodes if nodes[n][0] == "Conv"]
    listed_by: dict[str, list[int]] = {c: [] for c in convs}
    for d in graph.dispatches():
        assert all(n in nodes for n in d.onnx_nodes), (d.dispatch, d.onnx_nodes)
        own = [n for n in d.onnx_nodes if nodes[n][0] == "Conv"]
        assert len(own) <= 1, (d.dispatch, d.op_kind, d.onnx_nodes)
        if d.op_kind == "conv":
            assert own, (d.dispatch, d.onnx_nodes)
            listed_by[own[0]].append(d.dispatch)
            assert not set(d.onnx_nodes) & _upstream(own[0], nodes, producer), (d.dispatch, d.onnx_nodes)
    assert all(len(ds) == 1 for ds in listed_by.values()), {c: ds for c, ds in listed_by.items() if len(ds) != 1}


def test_outputs_are_named_by_the_model_outputs():
    _, _, outputs = _onnx("resnet50")
    graph = phase_graph(zoo_workspace("resnet50"))
    assert [n.label for n in graph.nodes if n.kind == "output"] == outputs == ["gpu_0/softmax_1"]
    (node,) = [n for n in graph.nodes if n.kind == "output"]
    assert node.outputs[0].shape == (1, 1000)  # the model's declared output shape
