"""Substitution through the CLI on a model whose weights live in params.irpa (issues 13 and 16)."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli import main
from npu_studio.core.compile.params import ParamOptions
from npu_studio.core.workspace.workspace import compile_model

from .onnx_reference import run_onnxruntime


def conv_relu_model(path):
    """x[1,3,16,16] -> Conv(16 filters, 3x3) + bias -> Relu; the 1.7 KB filter goes to the archive."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32) / 4
    b = rng.standard_normal(16).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W", "b"], ["y"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["y"], ["out"], name="act")],
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16, 16, 16])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def test_substituting_an_executable_of_a_parameterized_model(tmp_path, capsys):
    model = conv_relu_model(tmp_path / "conv_relu.onnx")
    ws = compile_model(model, tmp_path / "ws", params=ParamOptions(threshold_bytes=1024))
    assert ws.params_path.is_file() and ws.manifest.params["count"] == 1
    assert '#stream.parameter.named<"model"::"W">' in ws.snapshot_path("flow").read_text()

    assert main(["executables", str(ws.root), "--json"]) == 0
    infos = json.loads(capsys.readouterr().out)["executables"]
    # the padding gets a dispatch of its own; the conv's executable also computes the relu
    info = next(i for i in infos if i["ops"].startswith("conv 16x16x16x3x3x3 f32"))
    assert info["onnx_nodes"] == ["conv", "act"]

    # a typo: one line naming the file, line and column; exit code 2; nothing built
    typo = tmp_path / "typo.mlir"
    typo.write_text(open(info["source"]).read().replace("hal.executable.variant", "hal.executable.variat", 1))
    assert main(["substitute", str(ws.root), "--executable", info["name"], "--source", str(typo)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"npu-studio: error: {typo}:2:")

    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "wrong.npy", x[:, :2])
    assert main(["substitute", str(ws.root), "--executable", info["name"], "--source", info["source"],
                 "--input", str(tmp_path / "wrong.npy")]) == 2
    assert capsys.readouterr().err.startswith(f"npu-studio: error: {tmp_path / 'wrong.npy'}: input 0 of @conv_relu wants "
                                              "shape 1x3x16x16xf32, the file holds 1x2x16x16")
    rc = main(["substitute", str(ws.root), "--executable", info["name"], "--source", info["source"],
               "--input", str(tmp_path / "x.npy"), "--repetitions", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    comparison = out["comparison"]
    assert comparison["bit_identical"] and comparison["passed"]
    # both builds read the weights from the archive and agree with onnxruntime
    assert comparison["inputs"] == "x.npy"
    assert main(["run", str(ws.root), "--input", str(tmp_path / "x.npy"), "--output-dir", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    [ref] = run_onnxruntime(model, [x])
    np.testing.assert_allclose(np.load(tmp_path / "o" / "output0.npy"), ref, rtol=1e-4, atol=1e-4)
    assert comparison["onnxruntime"] == "compared"
    assert comparison["outputs"][0]["substituted_vs_onnxruntime"] < 1e-4

    assert main(["substitute", str(ws.root), "--list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["kind"], listed["enabled"]) == (info["name"], "source", True)
    assert listed["verdict"]["bit_identical"] is True


def test_a_dynamic_shape_executable_is_reported_as_not_timeable_alone(tmp_path):
    """IREE writes no standalone benchmark for a dispatch with a dynamic dim: the timing says so."""
    from npu_studio.core.executables import substitution as subs
    from npu_studio.core.executables.catalog import list_executables
    from npu_studio.core.run.kernel_timing import time_substitution
    from npu_studio.core.workspace import substitutions as sub_records

    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["out"], name="mm")], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 4])], [numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dyn.onnx")
    ws = compile_model(tmp_path / "dyn.onnx", tmp_path / "ws")
    [info] = list_executables(ws)
    assert info.benchmark is None and "?x4x8" in info.ops
    subs.substitute(ws, info.name, sub_records.SOURCE, info.source.read_text()).run()
    timing = time_substitution(ws, info.name, subs.plain_build(ws), whole_model=False)
    assert timing.plain is None and timing.substituted is None
    assert "cannot be benchmarked on its own" in timing.note and "dynamic shapes" in timing.note
    assert timing.note in timing.format()
