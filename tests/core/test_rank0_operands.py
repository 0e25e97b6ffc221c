"""Operands of rank 0 (scalar tensors) in every run path: `simulate --check`, the numeric gate, substitution.

The models are made here: attention-like blocks whose scale is a scalar graph input (it reaches a
dispatch as a tensor<f32> argument), and a model with a rank-0 output. Truth: onnxruntime on the
same inputs, and hand-computed ULP distances.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli import main
from npu_studio.core.run.numeric_gate import compare_arrays, ulp_distance


def attention(path, n: int, seed: int):
    """softmax((q @ k) * scale) @ W with `scale` a rank-0 input."""
    weights = numpy_helper.from_array(np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32), "W")
    nodes = [helper.make_node("MatMul", ["q", "k"], ["qk"], name="qk"),
             helper.make_node("Mul", ["qk", "scale"], ["scaled"], name="scale_mul"),
             helper.make_node("Softmax", ["scaled"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "W"], ["y"], name="pv")]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [n, n]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [n, n]),
              helper.make_tensor_value_info("scale", TensorProto.FLOAT, [])]
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], initializer=[weights])
    return _save(graph, path)


def scalar_out(path, n: int):
    """sum(x * s) over everything: a rank-0 input and a rank-0 output."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["xs"], name="mul"),
             helper.make_node("ReduceSum", ["xs"], ["y"], keepdims=0, name="sum")]
    graph = helper.make_graph(nodes, "scalar", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 8]),
                                                helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    return _save(graph, path)


def _save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def inputs_for(model_path, seed: int, folder) -> list:
    rng = np.random.default_rng(seed)
    paths = []
    for value in onnx.load(model_path).graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        array = rng.standard_normal(shape).astype(np.float32) if shape else np.array(rng.uniform(0.1, 1), np.float32)
        paths.append(folder / f"{value.name}.npy")
        np.save(paths[-1], array)
    return paths


def onnxruntime_outputs(model_path, input_paths) -> list[np.ndarray]:
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    feed = {i.name: np.load(p) for i, p in zip(session.get_inputs(), input_paths)}
    return session.run(None, feed)


@pytest.mark.parametrize("make, seed", [(lambda p: attention(p, 16, 1), 1), (lambda p: attention(p, 24, 2), 2),
                                        (lambda p: scalar_out(p, 4), 3), (lambda p: scalar_out(p, 32), 4)],
                         ids=["attention-16", "attention-24", "scalar-out-4", "scalar-out-32"])
def test_check_and_run_with_rank0_operands(make, seed, tmp_path, capsys):
    model = make(tmp_path / "m.onnx")
    inputs = inputs_for(model, seed, tmp_path)
    ws = tmp_path / "ws"
    assert main(["compile", str(model), "--workspace", str(ws)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    flags = [a for p in inputs for a in ("--input", str(p))]
    code = main(["simulate", str(ws), "--check", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err + out
    assert "OK" in out and "onnxruntime" in out
    assert main(["run", str(ws), *flags, "--output-dir", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    (expected,) = onnxruntime_outputs(model, inputs)
    got = np.load(tmp_path / "out" / "output0.npy")
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_substitution_gate_with_a_rank0_input_and_output(tmp_path, capsys):
    model = scalar_out(tmp_path / "m.onnx", 8)
    inputs = inputs_for(model, 5, tmp_path)
    ws = tmp_path / "ws"
    assert main(["compile", str(model), "--workspace", str(ws)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["executables", str(ws), "--json"]) == 0
    executable = json.loads(capsys.readouterr().out)["executables"][0]
    source = tmp_path / "same.mlir"
    source.write_text(open(executable["source"]).read())
    flags = [a for p in inputs for a in ("--input", str(p))]
    code = main(["substitute", str(ws), "--executable", executable["name"], "--source", str(source), *flags,
                 "--repetitions", "0", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    comparison = json.loads(out)["comparison"]
    assert comparison["passed"] is True and comparison["outputs"][0]["bit_identical"] is True, comparison
    assert comparison["outputs"][0]["shape"] == []  # the rank-0 output stays rank 0


@pytest.mark.parametrize("dtype, step", [(np.float32, 1), (np.float32, 5), (np.float16, 3)])
def test_ulp_distance_and_comparison_keep_rank0(dtype, step):
    a = np.array(1.0, dtype)
    b = a
    for _ in range(step):
        b = np.nextafter(b, np.array(2.0, dtype))
    distance = ulp_distance(a, b)
    assert distance.shape == () and int(distance) == step
    comparison = compare_arrays(a, np.asarray(b, dtype), tolerance=1e-2)
    assert comparison.max_ulp == step and comparison.shape == () and comparison.total == 1
