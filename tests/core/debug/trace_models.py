"""Models for the numerics-trace tests, built with onnx.helper (seeded weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(nodes, name, inputs, outputs, weights, path: Path) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(w, n) for n, w in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # onnxruntime rejects 14
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def mlp_bias(path: Path, layers: int = 3, width: int = 32, batch: int = 4) -> Path:
    """x -> (MatMul W_i -> Add b_i -> Relu) x layers: each layer one dispatch, its bias add an `arith.addf`."""
    rng = np.random.default_rng(11)
    nodes, weights, prev = [], [], "x"
    for i in range(layers):
        w = rng.uniform(-0.5, 0.5, (width, width)).astype(np.float32)
        b = rng.uniform(0.5, 1.0, (width,)).astype(np.float32)  # far from 0: a sign flip always shows
        weights += [(f"W{i}", w), (f"b{i}", b)]
        nodes += [helper.make_node("MatMul", [prev, f"W{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}")]
        last = i == layers - 1
        if not last:
            nodes.append(helper.make_node("Relu", [f"a{i}"], [f"h{i}"], name=f"relu{i}"))
        prev = f"a{i}" if last else f"h{i}"
    return _save(nodes, "mlp_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
                 [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [batch, width])], weights, path)


def attention(path: Path, seq: int = 16, dim: int = 32) -> Path:
    """One self-attention block: Q, K, V projections, softmax(Q K^T / sqrt(d)) V, output projection."""
    rng = np.random.default_rng(5)
    weights = [(n, rng.uniform(-0.3, 0.3, (dim, dim)).astype(np.float32)) for n in ("Wq", "Wk", "Wv", "Wo")]
    weights.append(("scale", np.array(1.0 / np.sqrt(dim), np.float32)))
    nodes = [
        helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "Wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["x", "Wv"], ["v"], name="v_proj"),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"),
        helper.make_node("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["ctx"], name="context"),
        helper.make_node("MatMul", ["ctx", "Wo"], ["y"], name="out_proj"),
    ]
    return _save(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, dim])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, dim])], weights, path)


def overflowing_mlp(path: Path, width: int = 32, batch: int = 4) -> Path:
    """x -> MatMul W0 + b0 -> Relu -> MatMul W1 (every weight 4000) -> Add -> Relu -> MatMul W2 + b2.

    b0 >= 1 keeps every h0 element >= 1 after the relu, so each element of
    h0 @ W1 is at least 32 * 4000 = 128000: past f16's largest finite 65504.
    """
    rng = np.random.default_rng(3)
    weights = [("W0", rng.uniform(-0.1, 0.1, (width, width)).astype(np.float32)),
               ("b0", rng.uniform(1.0, 1.5, (width,)).astype(np.float32)),
               ("W1", np.full((width, width), 4000.0, np.float32)),
               ("b1", np.zeros((width,), np.float32)),
               ("W2", rng.uniform(-1e-3, 1e-3, (width, width)).astype(np.float32)),
               ("b2", np.zeros((width,), np.float32))]
    nodes = [
        helper.make_node("MatMul", ["x", "W0"], ["m0"], name="mm0"),
        helper.make_node("Add", ["m0", "b0"], ["a0"], name="add0"),
        helper.make_node("Relu", ["a0"], ["h0"], name="relu0"),
        helper.make_node("MatMul", ["h0", "W1"], ["m1"], name="mm1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
        helper.make_node("Relu", ["a1"], ["h1"], name="relu1"),
        helper.make_node("MatMul", ["h1", "W2"], ["m2"], name="mm2"),
        helper.make_node("Add", ["m2", "b2"], ["y"], name="add2"),
    ]
    return _save(nodes, "overflowing_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, width])], weights, path)
