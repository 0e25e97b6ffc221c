"""A file named .onnx that is no ONNX model is refused in one line that says what it looks like instead.

Each file is written here with content of a known kind (text, JSON, MLIR text, ONNX's protobuf text
format, a zip archive, MLIR bytecode's magic, nothing at all); the CLI must name that kind, exit 2,
and leave no workspace behind. A broken real protobuf still gets the parser's words.
"""

from __future__ import annotations

import zipfile

import pytest

from .test_hostile_files import run_cli


def _zip(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("model.onnx", b"\x08\x0a")
    return path


CASES = {  # name: (how the file is made, what the message must say)
    "text": (lambda p: p.write_text("Notes about the model\nshapes: 1x3x224x224\n"), "looks like text"),
    "json": (lambda p: p.write_text('{"graph": {"node": []}}\n'), "looks like JSON text"),
    "mlir": (lambda p: p.write_text("module {\n  func.func @f() {\n    return\n  }\n}\n"),
             "looks like MLIR text (name it .mlir)"),
    "onnx-text-format": (lambda p: p.write_text('ir_version: 8\nproducer_name: "me"\n'),
                         "looks like ONNX in protobuf text format"),
    "zip": (_zip, "looks like a zip archive"),
    "mlirbc": (lambda p: p.write_bytes(b"ML\xefR\x00\x05\x01"), "looks like MLIR bytecode (name it .mlirbc)"),
    "empty": (lambda p: p.write_bytes(b""), "not an ONNX model: the file is empty"),
    "utf8-cut-at-the-end": (lambda p: p.write_bytes(("é" * 2047 + "x").encode()[:4095] + "é".encode()[:1]),
                            "looks like text"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_that_is_no_onnx_model_is_named_for_what_it_looks_like(case, tmp_path):
    make, expected = CASES[case]
    model = tmp_path / f"{case}.onnx"
    make(model)
    ws = tmp_path / "ws"
    code, err = run_cli(["compile", model, "--workspace", ws])
    assert code == 2, err
    (line,) = err.splitlines()
    assert str(model) in line and "not an ONNX model" in line and expected in line, line
    assert "protobuf (corrupt" not in line and "wire type" not in line
    assert not ws.exists()


def test_a_broken_protobuf_keeps_the_parsers_reason(tmp_path):
    """Field 1 (ir_version, a varint in ONNX) sent as a length-delimited field: binary, so no guess."""
    model = tmp_path / "broken.onnx"
    model.write_bytes(b"\x0a\x05hello")
    code, err = run_cli(["compile", model, "--workspace", tmp_path / "ws"])
    assert code == 2
    (line,) = err.splitlines()
    assert str(model) in line and "not a valid ONNX protobuf" in line and "looks like" not in line
