"""Defects a fresh-eyes tester (eyes35, issue 35) found with models built outside the project's fixtures.

The truth is the fault this test puts in itself: one op of one dispatch's executable changed in the
flow snapshot and applied with a resume; the trace must name exactly that dispatch or say
"cannot locate".
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.debug.numerics_trace import trace
from npu_studio.core.workspace import edit_state
from npu_studio.core.workspace.workspace import Workspace, compile_model
from tests.models import fault_edit


def causal_attention(path, seq: int = 8, dim: int = 16, fill: float = -1e9):
    """Scores of a GPT-style causal attention: (x Wq)(x Wk)^T * scale + mask, softmax, times x.
    The mask holds `fill` above the diagonal, as GPT exports do (-1e9, -1e4 or the float minimum)."""
    rng = np.random.default_rng(5)
    weights = {"Wq": rng.uniform(-.5, .5, (dim, dim)), "Wk": rng.uniform(-.5, .5, (dim, dim)),
               "scale": np.array(0.25), "mask": np.triu(np.full((seq, seq), fill), 1)}
    n = helper.make_node
    nodes = [n("MatMul", ["x", "Wq"], ["q"]), n("MatMul", ["x", "Wk"], ["k"]),
             n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), n("MatMul", ["q", "kt"], ["s"]),
             n("Mul", ["s", "scale"], ["ss"]), n("Add", ["ss", "mask"], ["sm"]),
             n("Softmax", ["sm"], ["p"], axis=-1), n("MatMul", ["p", "x"], ["y"])]
    graph = helper.make_graph(nodes, "causal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, dim])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def causal(tmp_path_factory):
    root = tmp_path_factory.mktemp("causal")
    return compile_model(causal_attention(root / "causal.onnx"), root / "ws")


def test_a_fault_in_the_masked_scores_is_named_there_not_at_the_softmax(causal, tmp_path):
    flow = causal.snapshot_path("flow").read_text()
    [site] = [i for i, (exe, export) in enumerate(fault_edit.sites(flow)) if export.endswith("_3_batch_matmul_1x8x8x16_f32")]
    span = fault_edit._executable_span(flow, fault_edit.sites(flow)[site][0])
    body = flow[span[0]:span[1]]
    assert body.count("arith.mulf %in, %cst_0") == 1, body  # the `* scale` IREE fused into the scores
    edited = flow[:span[0]] + body.replace("arith.mulf %in, %cst_0", "arith.addf %in, %cst_0") + flow[span[1]:]
    shutil.copytree(causal.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    edit_state.resume(ws, "flow", edited)
    report = trace(ws, seed=0)
    text = "\n".join(report.summary_lines())
    located = report.locate()
    assert report.exit_code == 1, text
    assert located.dispatch == site or (located.dispatch is None and located.reason), text
