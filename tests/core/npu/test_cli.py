import argparse
import json

from npu_studio.cli_commands import npu


def run(argv):
    ap = argparse.ArgumentParser()
    npu.add_parser(ap.add_subparsers())
    args = ap.parse_args(["npu", *map(str, argv)])
    return args.func(args)


def test_report_and_outputs(example_flow, tmp_path, capsys):
    out_json, out_mlir = tmp_path / "model.npu.json", tmp_path / "model.npu.mlir"
    assert run([example_flow, "--json", out_json, "--mlir", out_mlir]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Dispatch #0: conv -> NPU (tiles ")
    assert "SRAM peak" in text and "tasks" in text
    assert json.loads(out_json.read_text())["version"] == 1
    assert '"npu.conv"' in out_mlir.read_text()


def test_workspace_layout(example_flow, tmp_path, capsys):
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "06.flow.mlir").write_text(example_flow.read_text())
    assert run([tmp_path, "--target", "tiny"]) == 0
    assert "Dispatch #0: conv -> CPU fallback: unsupported dtype f32" in capsys.readouterr().out


def test_errors_are_one_line_exit_2(example_flow, tmp_path, capsys):
    assert run([example_flow, "--target", "tiny", "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unsupported dtype f32" in err
    assert run([tmp_path / "missing"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 3\n")
    assert run([example_flow, "--target", bad]) == 2
    assert f"{bad}:1: name:" in capsys.readouterr().err
