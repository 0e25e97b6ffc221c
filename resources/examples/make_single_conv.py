"""Regenerate resources/examples/single_conv.onnx.

The model from the user's notes: graph ``SingleConv``, input ``1x3x500x500 f32``,
one ``Conv`` with 8 filters of 3x3, a bias, no padding, stride 1, giving
``1x8x498x498``. Weights come from a fixed seed so the file is reproducible.

    python resources/examples/make_single_conv.py
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20260101


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(SEED)
    weight = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.2
    bias = rng.standard_normal(8).astype(np.float32) * 0.1
    conv = helper.make_node(
        "Conv",
        ["input", "weight", "bias"],
        ["output"],
        name="Conv_0",
        kernel_shape=[3, 3],
        strides=[1, 1],
        pads=[0, 0, 0, 0],
    )
    graph = helper.make_graph(
        [conv],
        "SingleConv",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 500, 500])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8, 498, 498])],
        initializer=[
            numpy_helper.from_array(weight, "weight"),
            numpy_helper.from_array(bias, "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime we test against
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("single_conv.onnx")
    onnx.save(build(), out)
    print(f"wrote {out}")
