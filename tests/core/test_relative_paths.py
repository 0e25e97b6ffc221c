"""Every path a user types works relative to the current folder.

The commands run in-process from a fresh folder with nothing but relative
paths: the model, --workspace, --input, --output-dir, --target, --json,
--csv, --trace, --mlir, -o, resume's snapshot and substitute's --source.
What they produce is checked against onnxruntime and against the files
themselves.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from npu_studio.cli import main

from ..conftest import EXAMPLE, REPO


@pytest.fixture
def here(tmp_path, monkeypatch):
    folder = tmp_path / "cwd"
    (folder / "models").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "models" / "conv.onnx")
    monkeypatch.chdir(folder)
    return folder


def ok(argv, capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_compile_and_run_with_relative_paths(here, capsys):
    ok(["compile", "models/conv.onnx", "--workspace", "ws"], capsys)
    assert (here / "ws" / "manifest.json").is_file() and (here / "ws" / "module.vmfb").is_file()
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal((1, 3, 500, 500)).astype(np.float32)
        np.save(f"x{seed}.npy", x)
        ok(["run", "ws", "--input", f"x{seed}.npy", "--output-dir", f"out{seed}"], capsys)
        session = ort.InferenceSession(str(here / "models" / "conv.onnx"), providers=["CPUExecutionProvider"])
        (expected,) = session.run(None, {session.get_inputs()[0].name: x})
        np.testing.assert_allclose(np.load(here / f"out{seed}" / "output0.npy"), expected, rtol=1e-4, atol=1e-4)


def test_npu_simulate_diff_resume_with_relative_paths(here, capsys):
    ok(["compile", "models/conv.onnx", "--workspace", "ws"], capsys)
    target = (REPO / "resources" / "targets" / "tiny.toml").read_text()
    Path("targets").mkdir()
    Path("targets/mine.toml").write_text(target.replace('name = "npu-tiny"', 'name = "relative-one"', 1))
    assert 'name = "relative-one"' in Path("targets/mine.toml").read_text()
    ok(["npu", "ws", "--target", "targets/mine.toml", "--json", "p.npu.json", "--mlir", "p.mlir"], capsys)
    program = json.loads(Path("p.npu.json").read_text())
    assert program["target"]["name"] == "relative-one"
    assert Path("p.mlir").read_text().strip()
    ok(["simulate", "ws", "--json", "s.json", "--csv", "s.csv", "--trace", "s.trace.json"], capsys)
    assert json.loads(Path("s.json").read_text())["dispatches"]
    assert Path("s.csv").read_text().count("\n") >= 2
    assert "traceEvents" in json.loads(Path("s.trace.json").read_text())
    ok(["diff", "ws", "input", "flow", "-o", "d.diff"], capsys)
    assert Path("d.diff").read_text().startswith("---")
    shutil.copy(here / "ws" / "phases" / "06.flow.mlir", "flow.mlir")
    ok(["resume", "flow.mlir", "--from", "flow", "--workspace", "ws"], capsys)
    assert (here / "ws" / "module.vmfb").is_file()


def test_substitute_and_check_with_relative_paths(here, capsys):
    ok(["compile", "models/conv.onnx", "--workspace", "ws"], capsys)
    listing = json.loads(ok(["executables", "ws", "--json"], capsys))
    executable = listing["executables"][0]
    shutil.copy(executable["source"], "edited.mlir")
    np.save("x.npy", np.random.default_rng(3).standard_normal((1, 3, 500, 500)).astype(np.float32))
    out = ok(["substitute", "ws", "--executable", executable["name"], "--source", "edited.mlir",
              "--input", "x.npy", "--repetitions", "0"], capsys)
    assert "PASS" in out
    assert "OK" in ok(["simulate", "ws", "--check", "--input", "x.npy"], capsys)
    assert os.getcwd() == str(here)
