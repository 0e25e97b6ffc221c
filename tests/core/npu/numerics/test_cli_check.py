"""`npu-studio simulate WORKSPACE --check [--input x.npy]`."""

from __future__ import annotations

import json
import shutil

import numpy as np

from npu_studio.cli import main
from npu_studio.core.run.runner import pick_function
from npu_studio.core.workspace.workspace import Workspace


def test_check_on_given_inputs_and_bad_input(example_workspace, tmp_path, capsys):
    ws_dir = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws_dir)
    spec = pick_function(Workspace.open(ws_dir).snapshot_path("input")).inputs[0]
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(5).uniform(-1, 1, spec.shape).astype(np.float32))
    assert main(["simulate", str(ws_dir), "--check", "--input", str(x)]) == 0
    out = capsys.readouterr().out
    assert "vs onnxruntime" in out and "vs iree-cpu" in out and out.rstrip().endswith("OK")
    kept = json.loads((ws_dir / "npu" / "check" / "last.json").read_text())
    assert kept["ok"] and kept["dispatches"][0]["computed_by"] == "npu" and kept["inputs"] == [list(spec.shape)]

    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((2, 2), np.float32))
    assert main(["simulate", str(ws_dir), "--check", "--input", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"npu-studio: error: {bad}: input 0 of @")
    assert "wants shape 1x3x500x500xf32, the file holds 2x2" in err  # the one --input reader's words
