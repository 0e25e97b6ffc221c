"""The command line, run as a user would: a separate process, exit codes, output."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from npu_studio.core.compile.phases import SNAPSHOT_PHASES

from ..conftest import EXAMPLE
from .bad_models import write_bad_models
from .onnx_reference import run_onnxruntime


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "npu_studio", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    ws = tmp_path_factory.mktemp("cli") / "ws"
    proc = cli("compile", EXAMPLE, "--workspace", ws)
    return ws, proc


def test_compile_prints_all_twelve_phases_with_times_and_sizes(compiled):
    ws, proc = compiled
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["phase", "seconds", "size", "ops"]
    rows = [ln.split() for ln in lines[1:13]]
    assert [r[0] for r in rows] == list(SNAPSHOT_PHASES)
    for row in rows:
        float(row[1])  # seconds
        assert row[3] in ("bytes", "KiB", "MiB")  # size unit
        assert int(row[4]) > 0  # op count
    assert f"workspace: {ws}" in proc.stdout


def test_compile_json(tmp_path):
    proc = cli("compile", EXAMPLE, "--workspace", tmp_path / "ws", "--json", "--target", "vmvx")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [p["phase"] for p in data["phases"]] == list(SNAPSHOT_PHASES)
    assert all(p["size_bytes"] > 0 and p["seconds"] >= 0 for p in data["phases"])


def test_run_matches_onnxruntime_on_given_input(compiled, tmp_path):
    ws, _ = compiled
    x = np.random.default_rng(7).standard_normal((1, 3, 500, 500)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = cli("run", ws, "--input", tmp_path / "x.npy", "--output-dir", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("output0: float32 1x8x498x498")
    (expected,) = run_onnxruntime(EXAMPLE, [x])
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output0.npy"), expected, atol=1e-4, rtol=0)


def test_resume_knows_the_phase_of_a_workspace_snapshot(compiled, tmp_path):
    import shutil

    ws, _ = compiled
    copy = tmp_path / "ws"
    shutil.copytree(ws, copy)
    proc = cli("resume", copy / "phases" / "07.stream.mlir")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].split()[0] == "input"
    proc = cli("resume", copy / "phases" / "07.stream.mlir", "--from", "flow")
    assert proc.returncode == 2
    assert "recorded this file as phase stream" in proc.stderr


@pytest.mark.parametrize("kind", ["empty", "truncated", "corrupt", "unknown_op", "unsupported_op", "missing_external_data"])
def test_bad_models_exit_2_with_one_line_naming_the_file(tmp_path, kind):
    bad = write_bad_models(tmp_path, EXAMPLE)[kind]
    proc = cli("compile", bad, "--workspace", tmp_path / "ws")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert str(bad) in err
    assert "Traceback" not in err


def test_unsupported_op_names_the_op_and_node(tmp_path):
    bad = write_bad_models(tmp_path, EXAMPLE)["unsupported_op"]
    proc = cli("compile", bad, "--workspace", tmp_path / "ws")
    assert "unsupported op onnx.StringNormalizer (ONNX node normalize)" in proc.stderr


@pytest.mark.parametrize("command", ["compile", "resume", "run"])
def test_help(command):
    proc = cli(command, "--help")
    assert proc.returncode == 0
    assert "usage: npu-studio " + command in proc.stdout
