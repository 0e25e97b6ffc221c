"""Broken ONNX files, built on the fly, for the error-path tests."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper


def write_bad_models(folder: Path, example: Path) -> dict[str, Path]:
    data = example.read_bytes()
    files = {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "corrupt": bytes((b * 7 + 13) % 256 for b in data[:800]),
    }
    paths = {}
    for name, content in files.items():
        p = folder / f"{name}.onnx"
        p.write_bytes(content)
        paths[name] = p

    # An op ONNX does not know at all.
    node = helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    paths["unknown_op"] = folder / "unknown_op.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), paths["unknown_op"])

    # A valid ONNX op that IREE cannot lower.
    node = helper.make_node("StringNormalizer", ["x"], ["y"], name="normalize")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    paths["unsupported_op"] = folder / "unsupported_op.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), paths["unsupported_op"])

    # Weights in an external file that is not there.
    model = onnx.load(example)
    onnx.save(model, folder / "external.onnx", save_as_external_data=True,
              all_tensors_to_one_file=True, location="external.bin", size_threshold=0)
    (folder / "external.bin").unlink()
    paths["missing_external_data"] = folder / "external.onnx"
    return paths
