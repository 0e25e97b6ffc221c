"""Small ONNX models for the functional-simulation tests (built with onnx.helper, seeded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(graph, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def mlp_softmax(path: Path) -> Path:
    """x(8x64) -> MatMul W1(64x128) -> Relu -> MatMul W2(128x64) -> Softmax.

    W1 and W2 are 32 KiB each (into the parameter archive with a small
    threshold); softmax has no indexing maps, so it is a CPU-fallback dispatch.
    """
    rng = np.random.default_rng(7)
    w1 = rng.uniform(-0.5, 0.5, (64, 128)).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (128, 64)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"),
        helper.make_node("Softmax", ["y"], ["out"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp_softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [8, 64])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")],
    )
    return _save(graph, path)


def matmul_f16(path: Path) -> Path:
    """A(128x64) @ B(64x128), both f16 inputs."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"], name="mm")], "matmul_f16",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT16, [128, 64]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT16, [64, 128])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT16, [128, 128])],
    )
    return _save(graph, path)
