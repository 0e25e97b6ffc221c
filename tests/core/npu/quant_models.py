"""Quantized test models made in the test run: onnxruntime's static QDQ quantization."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from flowgen import CACHE, flow_snapshot
from tests.zoo_cache import quantize_qdq


def conv_relu_model(seed: int = 0) -> onnx.ModelProto:
    """Conv 8 -> 16 channels, 3x3, pad 1, with bias, then Relu, on 1x8x12x12 (f32)."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2, "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "qconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def quantized(model: onnx.ModelProto, activation: str = "i8") -> onnx.ModelProto:
    """`model` through quantize_static (QDQ, per-channel int8 weights, seeded calibration)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        src = Path(tmp) / "m.onnx"
        onnx.save(model, str(src))
        return onnx.load(str(quantize_qdq(src, Path(tmp) / f"m_{activation}.onnx", activation)))


def qdq_conv_flow(activation: str = "i8") -> Path:
    """The flow snapshot of the quantized Conv + Relu (cached by model bytes)."""
    return flow_snapshot(quantized(conv_relu_model(), activation))


# The hand-worked model: integers in, a scale of 2 out, so half the accumulators are ties.
TIE_X = np.array([[1, 2, 3], [4, 5, -10], [100, 8, 9]], np.float32).reshape(1, 1, 3, 3)
TIE_W = np.array([[[[1, 1], [0, 0]]], [[[-10, -10], [-10, 0]]]], np.int8)  # 2 filters, 1 channel, 2x2
TIE_OUT_SCALE, TIE_OUT_ZERO_POINT = 2.0, 3


def tie_model() -> onnx.ModelProto:
    """x -> Q(1, 0) -> DQ -> Conv(DQ(TIE_W, 1, 0)) -> Q(TIE_OUT_SCALE, TIE_OUT_ZERO_POINT): int8 out."""
    inits = [
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0, np.int8), "zero"),
        numpy_helper.from_array(TIE_W, "w_q"),
        numpy_helper.from_array(np.array(TIE_OUT_SCALE, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(TIE_OUT_ZERO_POINT, np.int8), "y_zp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "one", "zero"], ["x_q"]),
        helper.make_node("DequantizeLinear", ["x_q", "one", "zero"], ["x_dq"]),
        helper.make_node("DequantizeLinear", ["w_q", "one", "zero"], ["w_dq"]),
        helper.make_node("Conv", ["x_dq", "w_dq"], ["acc"]),
        helper.make_node("QuantizeLinear", ["acc", "y_scale", "y_zp"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "ties", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 2, 2, 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def decoder_model(mode: str = "nearest", seed: int = 0) -> onnx.ModelProto:
    """A decoder block (f32): Conv 3x3 -> Relu -> Resize x2 (`mode`) -> ConvTranspose 4->2, stride 2."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    wt = numpy_helper.from_array(rng.standard_normal((4, 2, 2, 2)).astype(np.float32) * 0.3, "wt")
    bt = numpy_helper.from_array(rng.standard_normal(2).astype(np.float32) * 0.1, "bt")
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    resize = {"mode": mode}
    if mode == "nearest":
        resize.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        resize.update(coordinate_transformation_mode="half_pixel")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Resize", ["r", "", "scales"], ["u"], **resize),
             helper.make_node("ConvTranspose", ["u", "wt", "bt"], ["y"], strides=[2, 2])]
    graph = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 32, 32])],
                              [w, wt, bt, scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def f32_conv_model(c: int, f: int, hw: int, k: int, stride: int = 1, pad: int = 0, seed: int = 0) -> onnx.ModelProto:
    """One f32 Conv with bias (c -> f channels, k x k, on 1 x c x hw x hw): IREE sums it in f32."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((f, c, k, k)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(f).astype(np.float32), "b")
    o = (hw + 2 * pad - k) // stride + 1
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[pad] * 4, strides=[stride] * 2)
    graph = helper.make_graph([node], "f32conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, f, o, o])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model
