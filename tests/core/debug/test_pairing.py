"""Pairing that compares like with like, localization that holds, tolerance from the arithmetic.

On models built here with onnx.helper (not the project's fixtures), whose
dispatches are not one ONNX node each. Truths:
- onnxruntime's own tensors, chosen by hand for each dispatch from what the
  model computes (dispatch #1 of the encoder holds K split into heads and
  transposed: onnxruntime's `kh`), never the pairing's choice;
- IREE's own `--iree-flow-break-dispatch` builds (slow tests);
- the flow edit the test makes itself (which dispatch it breaks).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from npu_studio.core.debug.dispatch_break import break_after
from npu_studio.core.debug.numerics_trace import flow_index, reference_values, trace
from npu_studio.core.debug.trace_report import DispatchTrace, OutputTrace, TraceReport
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.run.flow_pairing import FlowPairing
from npu_studio.core.run.onnx_reference import imported_model
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.run.tolerance import arithmetic_tolerance
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import Workspace, compile_model

from . import pairing_models as models

MODELS = ("encoder_layer", "transpose_elementwise", "pad_conv", "f16_conv", "qdq_conv")


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """One compiled workspace per model, shared by the module's tests (copied before any edit)."""
    root = tmp_path_factory.mktemp("pairing_models")
    return {name: compile_model(getattr(models, name)(root / f"{name}.onnx"), root / name) for name in MODELS}


def _copy(build, tmp_path) -> Workspace:
    shutil.copytree(build.root, tmp_path / "ws")
    return Workspace.open(tmp_path / "ws")


@pytest.mark.parametrize("name", MODELS)
def test_clean_build_raises_no_false_alarm(builds, name, tmp_path):
    ws = _copy(builds[name], tmp_path)
    report = trace(ws, seed=3)
    text = "\n".join(report.summary_lines())
    assert report.ok and report.exit_code == 0 and report.locate().reason == "", text
    assert not any(d.departs for d in report.dispatches), text
    for d in report.dispatches:  # every dispatch is compared, or says why not
        assert d.paired or d.why_unpaired, text
    assert report.paired >= len(report.dispatches) - 2, text


def test_encoder_split_layer_norms_are_partial(builds, tmp_path):
    report = trace(_copy(builds["encoder_layer"], tmp_path), seed=1)
    partial = {d.index: d.partial_at for d in report.dispatches if d.partial_at is not None}
    # IREE splits each LayerNorm in two (index: reduction, reduction); the first half holds no ONNX tensor
    recs = index_file(builds["encoder_layer"].snapshot_path("flow"), "flow").dispatches
    halves = [r.index for r in recs if r.kind == "reduction"]
    assert len(halves) == 4 and partial == {halves[0]: halves[1], halves[2]: halves[3]}
    for i in partial:
        assert report.dispatches[i].why_unpaired == f"partial: compared at #{partial[i]}"


# What each dispatch of the encoder holds, by hand from the model: the ONNX tensor whose values,
# in row-major order, are the dispatch's result (IREE moved the head split and transposes into them).
ENCODER_HOLDS = {0: "q0", 1: "kh", 2: "v0", 3: "qh", 4: "vh", 5: "ss", 6: "p", 7: "ct", 8: "r1", 10: "n1",
                 11: "f2", 12: "r2", 14: "y"}


def _pairing_references(ws):
    """(results of each dispatch by the trace's own pairing, the references it moved, onnxruntime's tensors)."""
    model = imported_model(ws.source_path)
    b = variants.resolve(ws, variants.MAIN)
    index = flow_index(b)
    pairing = FlowPairing(b.snapshot_path("flow"), index, model)
    sig = pick_function(ws.snapshot_path("input"))
    inputs = random_inputs(sig, 0)
    hand = sorted(set(ENCODER_HOLDS.values()))
    from npu_studio.core.run.onnx_reference import run_with_intermediates

    _, onnx = run_with_intermediates(model, inputs, hand, ws.source_path)
    _, reference = reference_values(pairing, model, inputs, ws.source_path)
    moved = {}
    for rec in index.dispatches:
        [p] = pairing.pair(rec.index)
        if p.tensor is not None:
            zeros = np.zeros([d for d in pairing.declared[rec.index][0][0]], np.float32)
            moved[rec.index] = p.view(zeros, reference[p.tensor])[1]
    return moved, onnx


def test_encoder_references_are_moved_into_each_dispatch_layout(builds):
    moved, onnx = _pairing_references(builds["encoder_layer"])
    for index, tensor in ENCODER_HOLDS.items():
        assert index in moved, f"#{index} unpaired"
        np.testing.assert_array_equal(moved[index].ravel(), onnx[tensor].ravel(), err_msg=f"#{index} vs {tensor}")


def test_transpose_moved_past_an_elementwise_op_is_undone(builds):
    # IREE computes (x + b) * c before the transpose: in x's layout, m transposed back
    ws = builds["transpose_elementwise"]
    model = imported_model(ws.source_path)
    b = variants.resolve(ws, variants.MAIN)
    pairing = FlowPairing(b.snapshot_path("flow"), flow_index(b), model)
    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)
    _, reference = reference_values(pairing, model, x, ws.source_path)
    [p] = pairing.pair(0)
    ref = p.view(np.zeros((16, 32), np.float32), reference[p.tensor])[1]
    init = {t.name: t for t in model.graph.initializer}
    from onnx import numpy_helper

    bias, gain = numpy_helper.to_array(init["b"]), numpy_helper.to_array(init["c"])
    expected = (x[0][0] + bias) * gain.reshape(1, 32)  # by hand, in x's 16x32 layout
    np.testing.assert_allclose(ref, expected, rtol=1e-6)


def test_int8_dispatches_pair_with_the_quantized_tensor(builds, tmp_path):
    report = trace(_copy(builds["qdq_conv"], tmp_path), seed=2)
    int8 = [d for d in report.dispatches if d.dtype == "int8"]
    assert int8 and all(d.paired and d.onnx_tensor.endswith("QuantizeLinear_Output") for d in int8)
    assert all(d.atol == 1.0 and d.tolerance == 0.0 for d in int8)  # one step: floats rounded to int8


def _edit_first_op(ws, index: int) -> str:
    """Flip the first add/sub/mul of dispatch `index`'s executable; the op it edited."""
    flow = ws.snapshot_path("flow").read_text()
    rec = index_file(ws.snapshot_path("flow"), "flow").dispatches[index]
    start = flow.index(f"flow.executable private @{rec.executable} ")
    end = flow.find("flow.executable private", start + 1)
    swaps = {"arith.addf": "arith.subf", "arith.mulf": "arith.addf", "arith.addi": "arith.subi",
             "arith.divf": "arith.mulf"}
    at, op = min((flow.find(a + " ", start, end), a) for a in swaps if 0 <= flow.find(a + " ", start, end))
    ws.resume("flow", flow[:at] + swaps[op] + flow[at + len(op):])
    return op


def _assert_located_or_says_why(report, index: int):
    v = report.locate()
    text = "\n".join(report.summary_lines())
    if v.dispatch is not None:
        assert v.dispatch == index, text
    else:
        assert v.reason.startswith("cannot locate: ") and f"#{index}" in v.reason, text
    assert report.exit_code == 1 and not report.ok, text


@pytest.mark.parametrize("name,index", [("transpose_elementwise", 0), ("qdq_conv", 1), ("f16_conv", 2)])
def test_flow_edit_is_located_at_its_dispatch(builds, name, index, tmp_path):
    ws = _copy(builds[name], tmp_path)
    _edit_first_op(ws, index)
    report = trace(ws, seed=4)
    _assert_located_or_says_why(report, index)
    assert report.locate().dispatch == index


@pytest.mark.slow
@pytest.mark.parametrize("index", [3, 5, 8, 10, 11, 12])
def test_encoder_flow_edit_is_located_or_says_why(builds, index, tmp_path):
    ws = _copy(builds["encoder_layer"], tmp_path)
    _edit_first_op(ws, index)
    report = trace(ws, seed=4)
    _assert_located_or_says_why(report, index)
    if index == 10:  # the second half of a split LayerNorm: the error is born in #9 or #10
        assert "#9, #10" in report.locate().reason


@pytest.mark.slow
@pytest.mark.parametrize("index", [1, 3, 4, 7, 10])
def test_iree_break_builds_agree_with_the_moved_reference(builds, index, tmp_path):
    # IREE's own --iree-flow-break-dispatch build returns the dispatch's result; the hand-chosen
    # onnxruntime tensor holds the same values in the same order
    ws = _copy(builds["encoder_layer"], tmp_path)
    result = break_after(ws, index, seed=0)
    assert result.dispatch.paired and not result.dispatch.departs, "\n".join(result.summary_lines())
    variant = variants.get(ws, f"break-{index}")
    from npu_studio.core.run.runner import run_vmfb
    from npu_studio.core.run.onnx_reference import run_with_intermediates

    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)
    [out] = run_vmfb(variant.vmfb_path, "encoder_layer", x)
    _, onnx = run_with_intermediates(imported_model(ws.source_path), x, [ENCODER_HOLDS[index]], ws.source_path)
    np.testing.assert_allclose(out.ravel(), onnx[ENCODER_HOLDS[index]].ravel(), rtol=1e-4, atol=1e-4)


def test_f16_model_passes_within_f16_tolerance_and_fails_when_perturbed(builds, tmp_path):
    ws = _copy(builds["f16_conv"], tmp_path)
    report = trace(ws, seed=5)
    assert report.ok, "\n".join(report.summary_lines())
    [out] = report.outputs
    assert out.computed_in == "float16" and out.tolerance == arithmetic_tolerance(["f16"], "float32").relative
    assert out.max_abs_error > 1e-4 * out.scale  # more than an f32 tolerance would allow: the case at hand


def test_an_unfitted_substitution_never_reads_ok():
    d = DispatchTrace(0, "d0", [2], "float32", onnx_tensor="y", max_abs_error=0.0, max_rel_error=0.0, scale=1.0,
                      tolerance=1e-4, outside=0)
    report = TraceReport("ws", "f", [[2]], None, [d], [OutputTrace(0, 0.0, 1.0, 1e-4)], 0, 0, 0,
                         left_out=["executable e: its substitution is left out of the dispatch module (no export)"])
    assert not report.ok and report.first_divergent is None
    reason = report.locate().reason
    assert reason.startswith("cannot locate:") and "executable e" in reason
    assert report.summary_lines()[-1] == "CANNOT LOCATE"


def test_tolerance_rule_reads_the_arithmetic():
    assert arithmetic_tolerance({"f16", "f32"}, "float32").computed_in == "float16"  # f16 operands, f32 result
    assert arithmetic_tolerance({"f32"}, "float32").relative == 1e-4
    exact = arithmetic_tolerance({"i8", "i32"}, "int32")
    assert exact.relative == 0 and exact.absolute == 0
    step = arithmetic_tolerance({"i8", "i32", "f32"}, "int8")
    assert step.relative == 0 and step.absolute == 1
    assert step.bound(100.0) == 1.0 and arithmetic_tolerance({"bf16"}, "float32").bound(10.0) == pytest.approx(0.5)


def test_a_dispatch_computes_the_nodes_past_a_reshape_and_a_dropout():
    """inception_v1's QDQ pool: IREE fuses AveragePool, its QuantizeLinear, the DequantizeLinear and the
    QuantizeLinear after Dropout and Reshape (which fold away and no location names) into one dispatch,
    whose int8 result is the last QuantizeLinear's output (by hand, from the graph below)."""
    import onnx
    from onnx import TensorProto, helper

    from npu_studio.core.run.onnx_graph import OnnxGraphOrder

    q = lambda name, x, y: helper.make_node("QuantizeLinear", [x, "s", "z"], [y], name=name)  # noqa: E731
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], name="pool", kernel_shape=[2, 2]),
             q("q1", "p", "p_q"),
             helper.make_node("DequantizeLinear", ["p_q", "s", "z"], ["p_dq"], name="dq1"),
             helper.make_node("Dropout", ["p_dq"], ["d"], name="drop"),
             helper.make_node("Reshape", ["d", "shape"], ["r"], name="flat"),
             q("q2", "r", "r_q")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
                              [helper.make_tensor_value_info("r_q", TensorProto.INT8, [1, 4])],
                              [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]),
                               helper.make_tensor("z", TensorProto.INT8, [], [0]),
                               helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])])
    order = OnnxGraphOrder(helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]))
    located = ["pool", "q1", "dq1", "q2"]  # what the dispatch's locations name
    assert order.computed_by(located, ["pool"]) == located
    assert order.computed_by(["pool", "q1", "dq1"], ["pool"]) == ["pool", "q1", "dq1"]
