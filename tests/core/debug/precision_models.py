"""Models for the precision tests, built with onnx.helper (seeded weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(nodes, name, x_shape, y_shape, weights, path: Path) -> Path:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(w, n) for n, w in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # onnxruntime rejects 14
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def archived_mlp(path: Path) -> Path:
    """x[4,256] -> MatMul a.weight[256,128] -> Add b1 -> Relu (r) -> MatMul b.weight[128,256] (y).

    Both matrices are 128 KiB of f32: at or over the importer's 64 KiB
    threshold (compile/params.py), so they go to params.irpa; the bias stays inline.
    """
    rng = np.random.default_rng(7)
    weights = {"a.weight": rng.uniform(-0.2, 0.2, (256, 128)).astype(np.float32),
               "b1": rng.uniform(0.1, 0.5, (128,)).astype(np.float32),
               "b.weight": rng.uniform(-0.2, 0.2, (128, 256)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "a.weight"], ["h"], name="mm1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="add1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
             helper.make_node("MatMul", ["r", "b.weight"], ["y"], name="mm2")]
    return _save(nodes, "archived_mlp", [4, 256], [4, 256], weights, path)


def matmul_softmax(path: Path) -> Path:
    """x[8,32] -> MatMul W -> Softmax: IREE 3.13's f16 build of it calls fmaxf."""
    w = np.random.default_rng(1).uniform(-0.5, 0.5, (32, 32)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["s"], name="mm"),
             helper.make_node("Softmax", ["s"], ["y"], name="softmax", axis=-1)]
    return _save(nodes, "matmul_softmax", [8, 32], [8, 32], {"W": w}, path)


def depthwise_block(path: Path, channels: int = 8, size: int = 16) -> Path:
    """Depthwise 3x3 conv (padded) -> Relu -> pointwise 1x1 conv to 16 channels."""
    rng = np.random.default_rng(3)
    weights = {"dw": rng.uniform(-0.5, 0.5, (channels, 1, 3, 3)).astype(np.float32),
               "pw": rng.uniform(-0.5, 0.5, (16, channels, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "dw"], ["d"], name="dwconv", group=channels, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "pw"], ["y"], name="pwconv")]
    return _save(nodes, "depthwise_block", [1, channels, size, size], [1, 16, size, size], weights, path)
