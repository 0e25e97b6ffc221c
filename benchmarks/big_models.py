"""Realistic big ONNX models with random weights (seeded), since no model can be downloaded here.

- `resnet50_real(path)`: the light-zoo resnet50 architecture with every
  `ConstantOfShape` weight replaced by a real random initializer of that
  shape: 25.5 M parameters, about 100 MB of f32.
- `transformer_block(path)`: one pre-norm transformer block (single-head
  attention, MLP with 4x expansion) at d_model 2560, sequence 128: about
  79 M parameters, 315 MB of f32.

    .venv/bin/python benchmarks/big_models.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _light(name: str) -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def resnet50_real(path: Path, seed: int = 0) -> Path:
    """Light resnet50 with real weights: each ConstantOfShape(shape) becomes a random initializer."""
    model = onnx.load(str(_light("resnet50")))
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    keep, weights = [], []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            data = (rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))).astype(np.float32)
            weights.append(numpy_helper.from_array(data, node.output[0]))
        else:
            keep.append(node)
    used = {i for n in keep for i in n.input}
    initializers = [t for t in model.graph.initializer if t.name in used] + weights
    del model.graph.node[:]
    model.graph.node.extend(keep)
    del model.graph.initializer[:]
    model.graph.initializer.extend(initializers)
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def transformer_block(path: Path, d: int = 2560, seq: int = 128, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(shape[0]))).astype(np.float32), name)

    inits = [weight(n, (d, d)) for n in ("Wq", "Wk", "Wv", "Wo")]
    inits += [weight("W1", (d, 4 * d)), weight("W2", (4 * d, d))]
    inits += [numpy_helper.from_array(np.ones(d, np.float32), "ln1_g"), numpy_helper.from_array(np.zeros(d, np.float32), "ln1_b"),
              numpy_helper.from_array(np.ones(d, np.float32), "ln2_g"), numpy_helper.from_array(np.zeros(d, np.float32), "ln2_b"),
              numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32), "scale")]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], name="ln1", axis=-1),
        n("MatMul", ["h", "Wq"], ["q"], name="q_proj"),
        n("MatMul", ["h", "Wk"], ["k"], name="k_proj"),
        n("MatMul", ["h", "Wv"], ["v"], name="v_proj"),
        n("Transpose", ["k"], ["kt"], name="k_t", perm=[1, 0]),
        n("MatMul", ["q", "kt"], ["s"], name="scores"),
        n("Mul", ["s", "scale"], ["ss"], name="scale_scores"),
        n("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
        n("MatMul", ["p", "v"], ["a"], name="attend"),
        n("MatMul", ["a", "Wo"], ["o"], name="o_proj"),
        n("Add", ["x", "o"], ["r1"], name="residual1"),
        n("LayerNormalization", ["r1", "ln2_g", "ln2_b"], ["h2"], name="ln2", axis=-1),
        n("MatMul", ["h2", "W1"], ["u"], name="mlp_up"),
        n("Relu", ["u"], ["g"], name="mlp_act"),
        n("MatMul", ["g", "W2"], ["dn"], name="mlp_down"),
        n("Add", ["r1", "dn"], ["y"], name="residual2"),
    ]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def weight_bytes(path: Path) -> int:
    model = onnx.load(str(path), load_external_data=False)
    return sum(int(np.prod(t.dims)) * 4 for t in model.graph.initializer if t.data_type == TensorProto.FLOAT)


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for made in (resnet50_real(out / "resnet50_real.onnx"), transformer_block(out / "transformer_block.onnx")):
        print(f"{made}: {weight_bytes(made) / 1e6:.1f} MB of weights")
