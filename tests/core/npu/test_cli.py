import json

from npu_studio.cli import main


def run(argv):
    return main(["npu", *map(str, argv)])


def test_report_and_outputs(example_flow, tmp_path, capsys):
    out_json, out_mlir = tmp_path / "model.npu.json", tmp_path / "model.npu.mlir"
    assert run([example_flow, "--json", out_json, "--mlir", out_mlir]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Dispatch #0: conv -> NPU mac (tiles ")
    assert "1 of 1 dispatches on the NPU, 100.00% of " in text
    assert "SRAM peak" in text and "tasks" in text
    assert json.loads(out_json.read_text())["version"] == 1
    assert '"npu.conv"' in out_mlir.read_text()


def test_workspace(fresh_example, capsys):
    assert run([fresh_example.root, "--target", "tiny"]) == 0
    assert "Dispatch #0: conv -> CPU fallback: element type not supported (f32 in input 0)" in capsys.readouterr().out


def test_errors_are_one_line_exit_2(example_flow, tmp_path, capsys):
    assert run([example_flow, "--target", "tiny", "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "element type not supported (f32 in input 0)" in err
    assert run([tmp_path / "missing.onnx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / 'missing.onnx'}: no such file" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 3\n")
    assert run([example_flow, "--target", bad]) == 2
    assert f"{bad}:1: name:" in capsys.readouterr().err
