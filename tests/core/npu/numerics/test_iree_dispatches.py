"""The per-dispatch module IREE builds for the check."""

from __future__ import annotations

import numpy as np
from flowgen import flow_snapshot
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.run.dispatches.iree_dispatches import dispatch_module_text


def test_a_dynamic_dispatch_is_left_out_with_its_reason():
    w = numpy_helper.from_array(np.ones((16, 8), np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"), helper.make_node("Relu", ["y"], ["z"], name="r")],
        "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    text = dispatch_module_text(flow_snapshot(model).read_text())
    assert "// dispatch_0 left out: dispatch #0 has dynamic shapes" in text
    assert "util.func public @dispatch_0" not in text
