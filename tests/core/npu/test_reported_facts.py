"""What the reports say about a model, against truths they do not compute (issue 35, item 8).

- `npu` on a dynamic-shape model: the ONNX input has a symbolic dim, so no FLOP count exists.
- The requantization chains of a dispatch in body order: the ONNX graph's data flow fixes it.
- `module`'s constants: iree-dump-module's own rodata segments, and the initializers' bytes.
- A Gather dispatch's kind and element type: ONNX's Gather and its inferred output type.
"""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from flowgen import flow_snapshot
from npu_studio.cli import main as cli_main
from npu_studio.core.debug.module_contents import inspect_module
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.workspace.workspace import compile_model
from quant_models import quantized
from tests.core.npu.hal.test_time_limits import shape_gymnastics


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_npu_says_the_flop_of_a_dynamic_shape_are_unknown(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((16, 8), np.float32), "W")
    model = _model([helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Relu", ["y"], ["out"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 8])], [w])
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"  # the truth: no size to count
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    ws = compile_model(tmp_path / "dyn.onnx", tmp_path / "ws")
    capsys.readouterr()
    assert cli_main(["npu", str(ws.root)]) == 0
    out = capsys.readouterr().out
    assert "% of" not in out and "0 FLOP" not in out, out
    assert "FLOP unknown for 1 dispatch with dynamic shapes: #0" in out


def test_requantization_chains_in_body_order(default_target):
    """Conv (per-channel weights, bias) -> Relu -> Add(r, r): quantized, the Add reads the Conv's quantized
    output, so the Conv's per-channel + bias requantization comes first, the Add's per-tensor one second."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2, "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "b")
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["r", "r"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])], [w, b])
    program = run_npu_pipeline(flow_snapshot(quantized(model)), default_target)
    saved = json.loads(program.to_json())  # what model.npu.json holds
    (conv,) = [d for d in saved["dispatches"] if d["kind"] == "conv"]
    assert [(r["scale"], r["bias"]) for r in conv["requant"]] == [("per-channel", True), ("per-tensor", False)]
    assert conv["epilogue"].index("per-channel") < conv["epilogue"].index("per-tensor")


def test_module_counts_constants_embedded_in_the_flatbuffer(tmp_path):
    from iree import _runtime_libs

    ws = compile_model(shape_gymnastics(tmp_path / "gym.onnx"), tmp_path / "ws")  # weights inline
    onnx_floats = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(str(ws.source_path)).graph.initializer
                      if t.data_type == TensorProto.FLOAT)
    dump = subprocess.run([f"{_runtime_libs.__path__[0]}/iree-dump-module", "--output=metadata", str(ws.vmfb_path)],
                          capture_output=True, text=True, check=True).stdout
    # a constant pool has no text preview; the names (`hal.device.id` ...) do
    unnamed = [int(m.group(1)) for m in re.finditer(r"\.rodata\[\s*\d+\] embedded\s+(\d+) bytes\s*$", dump, re.M)]
    assert unnamed == [onnx_floats] == [4 * 8 * 6 * 4 + 32 * 8 * 4]
    contents = inspect_module(ws)
    assert contents.constants_bytes == contents.constants_embedded_bytes == onnx_floats
    assert "constants: 1.8 KiB (1.8 KiB embedded in the FlatBuffer, 0 bytes in the archive)" in \
        contents.summary_lines()


def test_a_gather_dispatch_has_the_kind_and_element_type_of_its_result(tmp_path):
    model = _model([helper.make_node("Gather", ["data", "idx"], ["g"], axis=0),
                    helper.make_node("Identity", ["g"], ["out"])],
                   [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 8])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 8])],
                   [numpy_helper.from_array(np.array([4, 0, 2], np.int64), "idx")])
    (g,) = onnx.shape_inference.infer_shapes(model).graph.value_info
    assert g.name == "g" and g.type.tensor_type.elem_type == TensorProto.FLOAT  # ONNX's type of the result
    (rec,) = index_file(flow_snapshot(model), "flow").dispatches
    assert rec.kind == "gather" and rec.root.dtype == "f32"
    assert [t.dtype for t in rec.root.inputs] == ["i64"]  # the index, which it is not named after
