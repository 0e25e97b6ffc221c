"""Models whose dispatches are not one ONNX node each, built with onnx.helper (seeded weights).

They exercise what pairing a dispatch with an ONNX tensor must get right:
a LayerNorm and a Softmax IREE splits over two dispatches, a transpose
fused into an elementwise dispatch, a pad before a convolution, an int8
QDQ convolution and a convolution computed in f16 between f32 casts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _save(nodes, name, inputs, outputs, weights, path: Path) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(w, n) for n, w in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10  # onnxruntime rejects newer
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _f(shape, rng, lo=-0.5, hi=0.5):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def encoder_layer(path: Path, seq: int = 16, dim: int = 32, heads: int = 2, ffn: int = 64) -> Path:
    """A post-norm transformer encoder layer: multi-head attention, residual, LayerNorm, FFN, residual, LayerNorm."""
    rng = np.random.default_rng(21)
    hd = dim // heads
    w = [(n, _f((dim, dim), rng, -0.3, 0.3)) for n in ("Wq", "Wk", "Wv", "Wo")]
    w += [("bq", _f((dim,), rng)), ("bo", _f((dim,), rng)),
          ("W1", _f((dim, ffn), rng, -0.3, 0.3)), ("b1", _f((ffn,), rng)),
          ("W2", _f((ffn, dim), rng, -0.3, 0.3)), ("b2", _f((dim,), rng)),
          ("g1", _f((dim,), rng, 0.5, 1.5)), ("be1", _f((dim,), rng)),
          ("g2", _f((dim,), rng, 0.5, 1.5)), ("be2", _f((dim,), rng)),
          ("heads_shape", np.array([1, seq, heads, hd], np.int64)),
          ("model_shape", np.array([1, seq, dim], np.int64)),
          ("scale", np.array(1.0 / np.sqrt(hd), np.float32))]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "Wq"], ["q0"], name="q_proj"), n("Add", ["q0", "bq"], ["q1"], name="q_bias"),
        n("MatMul", ["x", "Wk"], ["k0"], name="k_proj"),
        n("MatMul", ["x", "Wv"], ["v0"], name="v_proj"),
        n("Reshape", ["q1", "heads_shape"], ["q2"], name="q_split"),
        n("Reshape", ["k0", "heads_shape"], ["k2"], name="k_split"),
        n("Reshape", ["v0", "heads_shape"], ["v2"], name="v_split"),
        n("Transpose", ["q2"], ["qh"], name="q_heads", perm=[0, 2, 1, 3]),
        n("Transpose", ["k2"], ["kh"], name="k_heads", perm=[0, 2, 3, 1]),
        n("Transpose", ["v2"], ["vh"], name="v_heads", perm=[0, 2, 1, 3]),
        n("MatMul", ["qh", "kh"], ["s"], name="scores"),
        n("Mul", ["s", "scale"], ["ss"], name="scaled"),
        n("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
        n("MatMul", ["p", "vh"], ["ch"], name="context"),
        n("Transpose", ["ch"], ["ct"], name="merge_heads", perm=[0, 2, 1, 3]),
        n("Reshape", ["ct", "model_shape"], ["c"], name="merge"),
        n("MatMul", ["c", "Wo"], ["o0"], name="out_proj"), n("Add", ["o0", "bo"], ["o1"], name="out_bias"),
        n("Add", ["x", "o1"], ["r1"], name="residual1"),
        n("LayerNormalization", ["r1", "g1", "be1"], ["n1"], name="norm1", axis=-1, epsilon=1e-5),
        n("MatMul", ["n1", "W1"], ["f0"], name="ffn_up"), n("Add", ["f0", "b1"], ["f1"], name="ffn_bias1"),
        n("Relu", ["f1"], ["f2"], name="ffn_act"),
        n("MatMul", ["f2", "W2"], ["f3"], name="ffn_down"), n("Add", ["f3", "b2"], ["f4"], name="ffn_bias2"),
        n("Add", ["n1", "f4"], ["r2"], name="residual2"),
        n("LayerNormalization", ["r2", "g2", "be2"], ["y"], name="norm2", axis=-1, epsilon=1e-5),
    ]
    return _save(nodes, "encoder_layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, dim])], w, path)


def transpose_elementwise(path: Path) -> Path:
    """x (1x16x32) + b, transposed to 1x32x16, times c, reshaped to 2x16x16, then a MatMul.

    IREE fuses the transpose into the elementwise dispatch: its result is in the transposed order.
    """
    rng = np.random.default_rng(4)
    n = helper.make_node
    w = [("b", _f((32,), rng, 0.5, 1.0)), ("c", _f((32, 1), rng, 0.5, 1.5)),
         ("shape", np.array([2, 16, 16], np.int64)), ("W", _f((16, 8), rng))]
    nodes = [n("Add", ["x", "b"], ["a"], name="bias"),
             n("Transpose", ["a"], ["t"], name="swap", perm=[0, 2, 1]),
             n("Mul", ["t", "c"], ["m"], name="gain"),
             n("Reshape", ["m", "shape"], ["r"], name="fold"),
             n("MatMul", ["r", "W"], ["y"], name="proj")]
    return _save(nodes, "transpose_elementwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 8])], w, path)


def pad_conv(path: Path) -> Path:
    """Relu -> Pad (1 on each spatial side) -> Conv 3x3 -> Add, and a Conv with its own padding."""
    rng = np.random.default_rng(8)
    n = helper.make_node
    w = [("W1", _f((8, 4, 3, 3), rng)), ("W2", _f((8, 8, 3, 3), rng)), ("b2", _f((8,), rng, 0.5, 1.0)),
         ("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))]
    nodes = [n("Relu", ["x"], ["h"], name="act"),
             n("Pad", ["h", "pads"], ["hp"], name="pad", mode="constant"),
             n("Conv", ["hp", "W1"], ["c1"], name="conv1"),
             n("Sigmoid", ["c1"], ["s1"], name="gate"),
             n("Conv", ["s1", "W2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    return _save(nodes, "pad_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 12, 12])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])], w, path)


def f16_conv(path: Path) -> Path:
    """Cast to f16 -> Conv (f16 weights) -> Relu -> Conv -> Cast to f32: computes in f16, returns f32."""
    rng = np.random.default_rng(9)
    n = helper.make_node
    w = [("W1", _f((8, 4, 3, 3), rng).astype(np.float16)), ("b1", _f((8,), rng).astype(np.float16)),
         ("W2", _f((8, 8, 3, 3), rng).astype(np.float16)), ("b2", _f((8,), rng, 0.5, 1.0).astype(np.float16))]
    nodes = [n("Cast", ["x"], ["xh"], name="to_f16", to=TensorProto.FLOAT16),
             n("Conv", ["xh", "W1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             n("Relu", ["c1"], ["h1"], name="act1"),
             n("Conv", ["h1", "W2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             n("Cast", ["c2"], ["y"], name="to_f32", to=TensorProto.FLOAT)]
    return _save(nodes, "f16_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 10, 10])], w, path)


def qdq_conv(path: Path) -> Path:
    """A float Conv -> Relu -> Conv quantized by onnxruntime (QDQ, int8, per channel, seeded calibration)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(12)
    n = helper.make_node
    w = [("W1", _f((8, 4, 3, 3), rng)), ("b1", _f((8,), rng)), ("W2", _f((8, 8, 3, 3), rng)),
         ("b2", _f((8,), rng))]
    nodes = [n("Conv", ["x", "W1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             n("Relu", ["c1"], ["h1"], name="act1"),
             n("Conv", ["h1", "W2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    shape = [1, 4, 10, 10]
    float_path = path.with_name(path.stem + "_float.onnx")
    _save(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 10, 10])], w, float_path)

    class Reader(CalibrationDataReader):
        def __init__(self):
            data = np.random.default_rng(13)
            self.batches = iter([{"x": data.uniform(-1, 1, shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(float_path), str(path), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    model = onnx.load(str(path))
    model.ir_version = 10
    del model.opset_import[:]
    model.opset_import.extend([helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
