"""A model with several outputs: each output node is fed by the dispatch that computes it.

Truth: the ONNX graph built here by hand. `sum_out = Exp(a + b)`, `mm_out = Tanh(b @ c)`,
`red_out = ReduceSum((a + b) @ c)`; IREE fuses Add+Exp, MatMul+Tanh and keeps the second MatMul
and the ReduceSum apart, then joins the three results in one `hal.tensor.barrier` before
exporting them. The barrier's i-th result is its i-th operand, so each output has exactly one
producing dispatch: the one whose ONNX nodes include the output's producer.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.graph.build import phase_graph
from tests.zoo_cache import cached_workspace

OUTPUT_PRODUCER = {"sum_out": "exp_s", "mm_out": "tanh_m", "red_out": "reduce"}


def _multi_output_model(folder):
    def io(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add_ab"),
             helper.make_node("Exp", ["s"], ["sum_out"], name="exp_s"),
             helper.make_node("MatMul", ["b", "c"], ["m"], name="mm_bc"),
             helper.make_node("Tanh", ["m"], ["mm_out"], name="tanh_m"),
             helper.make_node("MatMul", ["s", "c"], ["m2"], name="mm_sc"),
             helper.make_node("ReduceSum", ["m2", "axes"], ["red_out"], name="reduce", keepdims=1)]
    graph = helper.make_graph(nodes, "mimo", [io("a", [4, 16]), io("b", [4, 16]), io("c", [16, 8])],
                              [io("sum_out", [4, 16]), io("mm_out", [4, 8]), io("red_out", [4, 1])],
                              [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "mimo.onnx"
    onnx.save(model, str(path))
    return path


def test_each_output_is_fed_by_the_dispatch_that_computes_it():
    ws = cached_workspace("multi_output", _multi_output_model, group="graph-own")
    graph = phase_graph(ws, "flow")
    nodes = {n.id: n for n in graph.nodes}
    feeds: dict[str, set[str]] = {}
    for e in graph.edges:
        if e.target.startswith("output:"):
            feeds.setdefault(nodes[e.target].label, set()).add(e.source)
    assert set(feeds) == set(OUTPUT_PRODUCER)
    for output, producer in OUTPUT_PRODUCER.items():
        (source,) = feeds[output]  # one producer, not every dispatch joined in the barrier
        assert producer in nodes[source].onnx_nodes, (output, source, nodes[source].onnx_nodes)


def test_edges_are_the_flow_ssa_walk():
    from tests.core.graph.test_graph_zoo import ssa_edges

    ws = cached_workspace("multi_output", _multi_output_model, group="graph-own")
    graph = phase_graph(ws, "flow")
    assert {(e.source, e.target) for e in graph.edges} == ssa_edges(ws.snapshot_path("flow").read_text())
