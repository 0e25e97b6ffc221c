"""The small CNN the sweep tests run beside the bundled example."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def small_cnn():
    """conv 3x3 -> relu -> conv 1x1 -> flatten -> softmax over 2048 values: the softmax needs a
    whole row (8 KiB of f32, double-buffered in and out) in SRAM, so 16 KiB cannot hold it."""
    rs = np.random.RandomState(0)
    w1 = numpy_helper.from_array(rs.randn(8, 4, 3, 3).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(rs.randn(8, 8, 1, 1).astype(np.float32), "W2")
    shape = numpy_helper.from_array(np.array([1, 2048], np.int64), "shape")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2048])
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1], name="Conv_1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="Relu_1"),
             helper.make_node("Conv", ["r1", "W2"], ["c2"], name="Conv_2"),
             helper.make_node("Reshape", ["c2", "shape"], ["f"], name="Flatten"),
             helper.make_node("Softmax", ["f"], ["y"], axis=-1, name="Softmax")]
    g = helper.make_graph(nodes, "small_cnn", [x], [y], [w1, w2, shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m
