"""`npu-studio graph`'s messages: bad choices in one line, counts in the right number."""

from __future__ import annotations

import json

import pytest

from npu_studio.cli import main as cli_main
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.workspace.workspace import compile_model
from tests.core.debug import trace_models as models


@pytest.mark.parametrize("option, value, a_choice", [("--phase", "bogus", "dispatch-creation"),
                                                     ("--overlay", "nope", "cycles")])
def test_a_bad_choice_is_one_line_naming_the_value_and_the_choices(tmp_path, capsys, option, value, a_choice):
    with pytest.raises(SystemExit) as stop:
        cli_main(["graph", str(tmp_path), option, value, "--json", str(tmp_path / "g.json")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"'{value}'" in err and a_choice in err and option in err
    assert not (tmp_path / "g.json").exists()


def test_one_dispatch_is_counted_as_one_dispatch(tmp_path, capsys):
    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx", layers=1), tmp_path / "ws")
    assert len(index_file(ws.snapshot_path("flow"), "flow").dispatches) == 1  # one matmul with its bias add
    assert cli_main(["graph", str(ws.root), "--json", str(tmp_path / "g.json")]) == 0
    out = capsys.readouterr().out
    assert ": 1 dispatch, " in out and "dispatches" not in out


def test_the_graphs_notes_are_printed_not_only_kept_in_the_json(tmp_path, capsys):
    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx", layers=1), tmp_path / "ws")
    assert cli_main(["graph", str(ws.root), "--json", str(tmp_path / "g.json")]) == 0
    printed = [line[len("note: "):] for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    notes = json.loads((tmp_path / "g.json").read_text())["notes"]
    assert printed == notes  # every note, as the JSON has them
    assert any("no NPU program" in n for n in printed), printed  # compiled only: why the NPU overlays are empty
