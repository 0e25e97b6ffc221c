"""A flow snapshot edited in place and resumed from the command line (`npu-studio resume
ws/phases/06.flow.mlir`): the compiler's text is gone (only an edit through the app or from a file
outside the workspace keeps it), but the resume keeps the edited text as the "original". Found by eyes39:
the edits overlay then marks nothing and says nothing, as if the build were the compiler's own.
Truth: the workspace's manifest, which records the edit, and the edit itself (made here).
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


from npu_studio.cli import main as cli_main
from npu_studio.core.graph.build import workspace_graph
from npu_studio.core.workspace import edit_state
from npu_studio.core.workspace.workspace import Workspace
from tests.zoo_cache import cached_workspace


def _two_convs(folder):
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    weights = [numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), f"W{i}")
               for i in range(2)]
    nodes = [helper.make_node("Conv", ["x", "W0"], ["a"], name="conv0"),
             helper.make_node("Relu", ["a"], ["r"], name="relu0"),
             helper.make_node("Conv", ["r", "W1"], ["c"], name="conv1"),
             helper.make_node("Add", ["c", "x"], ["y"], name="residual")]
    model = helper.make_model(helper.make_graph(nodes, "two", [x], [y], weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "two.onnx"))
    return folder / "two.onnx"


def test_an_edit_in_place_is_never_taken_for_the_compilers_text(tmp_path):
    shutil.copytree(cached_workspace("two_convs", _two_convs, group="graph-own").root, tmp_path / "ws")
    snap = tmp_path / "ws" / "phases" / "06.flow.mlir"
    text = snap.read_text()
    assert "arith.addf" in text
    snap.write_text(text.replace("arith.addf", "arith.subf", 1))  # the user's editor, in place
    assert cli_main(["resume", str(snap)]) == 0
    ws = Workspace.open(tmp_path / "ws")
    assert any(e["phase"] == "flow" for e in ws.manifest.edits)
    kept = edit_state.original_path(ws, "flow")
    assert not kept.is_file() or kept.read_text() == text  # only ever the compiler's own text
    graph = workspace_graph(ws)
    marked = [n.dispatch for n in graph.dispatches() if n.overlay.get("edit")]
    # the edited dispatch marked, or (the compiler's text lost) a note saying the flow was edited
    assert len(marked) == 1 or any("edit" in note and "06.flow" in note for note in graph.notes), graph.notes
