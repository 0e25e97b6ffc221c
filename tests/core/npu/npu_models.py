"""Small ONNX models built in the tests: the NPU coverage cases."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def f16_matmul():
    """The week-2 plan's dispatch: MatMul of 128x64 and 64x128 f16 tensors."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT16, [128, 64])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT16, [64, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [128, 128])
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="MatMul_0")], "mm", [a, b], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def attention(s=64, d=32, h=2):
    """softmax(Q·Kᵀ · scale)·V over h heads (the transpose an ONNX node of its own)."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [h, s, d])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT, [h, s, d])
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [h, s, d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [h, s, d])
    scale = numpy_helper.from_array(np.array(1.0 / np.sqrt(d), np.float32), "scale")
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="Transpose_K"),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="MatMul_QK"),
        helper.make_node("Mul", ["qk", "scale"], ["qks"], name="Scale"),
        helper.make_node("Softmax", ["qks"], ["p"], axis=-1, name="Softmax"),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="MatMul_PV"),
    ]
    g = helper.make_graph(nodes, "attn", [q, k, v], [y], [scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def fire():
    """A squeezenet fire module: one activation read unpadded and padded."""
    rs = np.random.RandomState(0)
    w1 = numpy_helper.from_array(rs.randn(8, 3, 3, 3).astype(np.float32), "W1")
    wa = numpy_helper.from_array(rs.randn(4, 8, 1, 1).astype(np.float32), "Wa")
    wb = numpy_helper.from_array(rs.randn(4, 8, 3, 3).astype(np.float32), "Wb")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 18, 18])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], name="Conv_1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="Relu_1"),
             helper.make_node("Conv", ["r1", "Wa"], ["a"], name="Conv_a"),
             helper.make_node("Conv", ["r1", "Wb"], ["b"], pads=[1, 1, 1, 1], name="Conv_b"),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1, name="Concat")]
    g = helper.make_graph(nodes, "fire", [x], [y], [w1, wa, wb])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def i8_matmul():
    """MatMulInteger: i8 x i8 accumulated and returned in i32."""
    a = helper.make_tensor_value_info("a", TensorProto.INT8, [64, 32])
    b = helper.make_tensor_value_info("b", TensorProto.INT8, [32, 48])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [64, 48])
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="MatMulInteger_0")],
                          "mmi", [a, b], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
