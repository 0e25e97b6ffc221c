"""A dispatch's kind is the same in every phase (issue 37, item 4): the Pad before a Conv (what makes
resnet50's dispatch #0) is "pad" in flow, stream, executable-targets and hal alike, not "insert" in
one and blank in another."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npu_studio.core.ir.dispatch_index import index_file, link_phase_indexes
from npu_studio.core.workspace.workspace import compile_model


def pad_then_conv(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph([helper.make_node("Pad", ["x", "pads"], ["p"], name="Pad_0", mode="constant"),
                               helper.make_node("Conv", ["p", "w"], ["y"], name="Conv_0", kernel_shape=[3, 3])],
                              "pad_conv", [x], [y], [w, pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_the_pad_dispatch_is_pad_in_every_phase(tmp_path):
    ws = compile_model(pad_then_conv(tmp_path / "pad_conv.onnx"), tmp_path / "ws")
    indexes = {p: index_file(ws.snapshot_path(p), p) for p in ws.manifest.phases}
    link_phase_indexes(indexes)
    flow = indexes["flow"]
    # The ONNX graph is the truth: the dispatch computing node Pad_0 pads, the one computing Conv_0 convolves.
    expected = {r.index: ("pad" if "Pad_0" in r.onnx_nodes and "Conv_0" not in r.onnx_nodes else "conv")
                for r in flow.dispatches}
    assert sorted(expected.values()) == ["conv", "pad"], [(r.index, r.onnx_nodes) for r in flow.dispatches]
    phases_with_both = 0
    for phase, index in indexes.items():
        kinds = {r.index: r.kind for r in index.dispatches}
        if not kinds:
            continue
        phases_with_both += 1
        assert kinds == expected, f"{phase}: {kinds}"
    assert phases_with_both >= 6  # dispatch-creation .. hal
