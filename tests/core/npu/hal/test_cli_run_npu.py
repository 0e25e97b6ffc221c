"""`npu-studio run WORKSPACE --npu`: the verdict, the outputs, and a missing C compiler."""

from __future__ import annotations

import shutil

import numpy as np

from npu_studio.cli import main
from npu_studio.core.run.runner import pick_function
from npu_studio.core.workspace.workspace import Workspace
from tests.core.onnx_reference import run_onnxruntime


def test_run_npu_on_given_inputs(example_workspace, tmp_path, capsys, cc):
    ws_dir = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws_dir)
    ws = Workspace.open(ws_dir)
    spec = pick_function(ws.snapshot_path("input")).inputs[0]
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(5).uniform(-1, 1, spec.shape).astype(np.float32))
    assert main(["run", str(ws_dir), "--npu", "--input", str(x), "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 dispatches through the NPU plugin" in out and "1 plugin calls" in out
    assert "vs onnxruntime" in out and "vs iree-cpu" in out and out.rstrip().endswith("OK")
    (ort,) = run_onnxruntime(ws.source_path, [np.load(x)])
    ours = np.load(tmp_path / "output0.npy")
    assert np.max(np.abs(ours - ort)) <= 1e-4 * max(1.0, np.max(np.abs(ort)))


def test_missing_c_compiler_is_one_line_and_exit_2(example_workspace, tmp_path, capsys, monkeypatch):
    ws_dir = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws_dir)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no plugin built earlier
    assert main(["run", str(ws_dir), "--npu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no C compiler to build the NPU plugin" in err
    assert not (ws_dir / "npu" / "hal").exists()  # nothing built before the compiler was found


def test_target_without_npu_is_refused(example_workspace, capsys):
    assert main(["run", str(example_workspace.root), "--target", "tiny"]) == 2
    assert "--target is the NPU target of --npu" in capsys.readouterr().err
