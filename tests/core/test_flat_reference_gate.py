"""End to end: a substitution checked on inputs that make the output all zeros cannot tell (issue 24)."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli import main
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace, compile_model


def _matmul(path):
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["out"], name="mm")], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 4])], [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def test_zero_input_gives_an_all_zero_reference_and_the_gate_cannot_tell(tmp_path, capsys):
    ws = compile_model(_matmul(tmp_path / "mm.onnx"), tmp_path / "ws")
    [info] = list_executables(ws)
    np.save(tmp_path / "zeros.npy", np.zeros((4, 8), np.float32))  # 0 @ W = 0, whatever W is
    np.save(tmp_path / "x.npy", np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
    base = ["substitute", str(ws.root), "--executable", info.name, "--source", str(info.source),
            "--repetitions", "0"]

    # the unedited executable on zeros: bit-identical, yet the check cannot tell; exit code 1, not a pass
    assert main([*base, "--input", str(tmp_path / "zeros.npy")]) == 1
    out = capsys.readouterr().out
    assert "the plain build's output is constant (all 0.0): the check cannot tell" in out
    assert out.splitlines()[-1].startswith("verdict: CANNOT TELL: the plain build's output0 is constant (all 0.0)")
    [record] = sub_records.load(Workspace.open(ws.root))
    assert record.verdict["status"] == "CANNOT TELL" and record.verdict["passed"] is False
    assert main(["executables", str(ws.root)]) == 0
    assert "source (on) CANNOT TELL (flat reference)" in capsys.readouterr().out

    # on other inputs the same substitution passes, and JSON carries the scale-relative error
    assert main([*base, "--input", str(tmp_path / "x.npy"), "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)["comparison"]
    [o] = comparison["outputs"]
    assert comparison["status"] == "bit-identical" and o["plain_flat"] is None and o["notes"] == []
    assert o["rel_error"] == 0.0 and o["scale"] > 0
