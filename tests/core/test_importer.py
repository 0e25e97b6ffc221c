import onnx
import pytest
from onnx import TensorProto, helper

from npu_studio.core.compile.importer import import_model
from npu_studio.core.errors import ImportFailed

from ..conftest import EXAMPLE
from .bad_models import write_bad_models


def test_example_import_keeps_node_names(tmp_path):
    result = import_model(EXAMPLE, tmp_path / "m.mlir")
    text = result.mlir_path.read_text()
    assert 'loc("Conv_0")' in text
    assert "onnx.Conv" in text
    assert result.opset_after == 17


def test_old_opset_is_upgraded_and_unnamed_nodes_named(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    path = tmp_path / "old.onnx"
    onnx.save(model, path)
    result = import_model(path, tmp_path / "old.mlir")
    assert (result.opset_before, result.opset_after, result.renamed_nodes) == (9, 17, 2)
    text = result.mlir_path.read_text()
    assert 'loc("Relu_0")' in text and 'loc("Relu_1")' in text


@pytest.mark.parametrize("kind,reason", [
    ("empty", "file is empty"),
    ("truncated", "corrupt or truncated"),
    ("corrupt", "corrupt or truncated"),
    ("unknown_op", "unsupported op"),
    ("missing_external_data", "external data"),
])
def test_bad_files_raise_one_line_errors_naming_the_file(tmp_path, kind, reason):
    bad = write_bad_models(tmp_path, EXAMPLE)[kind]
    with pytest.raises(ImportFailed) as info:
        import_model(bad, tmp_path / "out.mlir")
    message = str(info.value)
    assert message.startswith(str(bad))
    assert reason in message
    assert "\n" not in message


def test_mlir_is_accepted_as_is(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }\n")
    result = import_model(src, tmp_path / "imported.mlir")
    assert result.mlir_path.read_text() == src.read_text()


def test_unknown_suffix_is_rejected(tmp_path):
    p = tmp_path / "model.txt"
    p.write_text("hello")
    with pytest.raises(ImportFailed, match="unsupported file type .txt"):
        import_model(p, tmp_path / "o.mlir")
