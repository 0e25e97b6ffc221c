"""`npu-studio extract WORKSPACE N --out DIR`: one dispatch as a reproducer that needs only IREE's tools.

Truths: IREE's own tools (run.sh runs iree-compile and iree-run-module in a
fresh shell whose PATH holds only the venv's bin, not even the system's; its exit
code is iree-run-module's byte-for-byte `--expected_output` compare), the
ONNX model run by onnxruntime in the test (what a dispatch's operand and
result must be), and the edit the test makes (addf -> subf on the conv's bias).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli import main as cli_main
from npu_studio.core.compile.params import ParamOptions
from npu_studio.core.debug.extract import extract
from npu_studio.core.run.onnx_reference import run_with_intermediates
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.workspace.workspace import Workspace, compile_model

CONV, MATMUL = 1, 2  # dispatch #0 pads the input for the conv (a copy), #1 conv+bias+relu, #2 the matmul


def conv_relu_matmul(path: Path) -> Path:
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    m = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "m")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "m"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "crm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 5])], [w, b, m])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("extract")
    # weights of 100 bytes and more in params.irpa: the reproducer's operands then include them
    return compile_model(conv_relu_matmul(d / "crm.onnx"), d / "ws", params=ParamOptions(threshold_bytes=100))


@pytest.fixture
def ws(built, tmp_path):
    shutil.copytree(built.root, tmp_path / "ws")
    return Workspace.open(tmp_path / "ws")


def _venv_bin() -> Path:
    """The folder with the venv's iree-compile and iree-run-module console scripts."""
    here = Path(sys.executable).parent
    assert (here / "iree-compile").is_file() and (here / "iree-run-module").is_file(), here
    return here


def _run_sh(folder: Path) -> subprocess.CompletedProcess:
    """run.sh in a fresh shell: no environment but a PATH of the venv's bin alone (no dirname, mkdir or
    grep from the system: IREE's tools and the shell's builtins must do)."""
    return subprocess.run(["/usr/bin/env", "-i", f"PATH={_venv_bin()}", "/bin/sh", str(folder / "run.sh")],
                          cwd="/", capture_output=True, text=True, timeout=300)


def _nudge(path: Path) -> None:
    """One element of a stored output moved by one ulp."""
    a = np.load(path)
    a.flat[3] = np.nextafter(a.flat[3], np.float32(np.inf))
    np.save(path, a)


def _edit_conv_bias(ws: Workspace) -> None:
    flow = ws.snapshot_path("flow").read_text()
    start = flow.index("flow.executable private @crm$async_dispatch_1 ")
    at = flow.index("arith.addf %in, %in_1", start)  # the bias add after the conv's reduction
    assert at < flow.index("flow.executable private", start + 1)
    ws.resume("flow", flow[:at] + "arith.subf" + flow[at + len("arith.addf"):])


def test_first_departing_dispatch_extracted_reproduces_in_a_fresh_shell(ws, tmp_path, capsys, monkeypatch):
    _edit_conv_bias(ws)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["trace", str(ws.root)]) == 1
    printed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("reproducer of #")]
    assert len(printed) == 1 and printed[0].startswith(f"reproducer of #{CONV}: npu-studio extract ")
    command = shlex.split(printed[0].partition(": ")[2])
    assert command[:4] == ["npu-studio", "extract", str(ws.root), str(CONV)]
    assert cli_main(command[1:]) == 0
    out = tmp_path / command[command.index("--out") + 1]
    assert "DEPARTS" in capsys.readouterr().out
    assert (out / "dispatch.mlir").read_text().count("arith.subf") == 1  # the flow edit is in the reproducer
    assert any((out / "sources").glob("*.mlir")) and any((out / "benchmarks").glob("*.mlir"))

    # The captured operand is the conv's padded input: x with a zero border (onnxruntime's x, the test's pad).
    x = random_inputs(pick_function(ws.snapshot_path("input")), 0)[0]
    padded = np.load(out / "input0.npy")
    np.testing.assert_array_equal(padded, np.pad(x[0], ((0, 0), (1, 1), (1, 1))))

    done = _run_sh(out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reproduced" in done.stdout
    # iree-run-module's own tolerance compare with onnxruntime's tensor: the subf edit departs.
    assert "against ONNX tensor r: DEPARTS" in done.stdout
    _, ref = run_with_intermediates(onnx.load(str(ws.source_path)), [x], ["r"], ws.source_path)
    assert np.abs(np.load(out / "onnx_reference0.npy") - ref["r"][0]).max() == 0

    _nudge(out / "iree_output0.npy")
    failed = _run_sh(out)
    assert failed.returncode == 1 and "NOT reproduced" in failed.stdout


def test_clean_dispatch_reproduces_and_agrees_with_onnx(ws, tmp_path, capsys):
    out = tmp_path / "matmul"
    assert cli_main(["extract", str(ws.root), str(MATMUL), "--out", str(out), "--seed", "3"]) == 0
    assert "agrees" in capsys.readouterr().out
    # The matmul's operands: relu's output (onnxruntime, same seeded input) as 32x8, and the weight m.
    x = random_inputs(pick_function(ws.snapshot_path("input")), 3)
    _, ref = run_with_intermediates(onnx.load(str(ws.source_path)), x, ["r"], ws.source_path)
    operands = [np.load(out / f"input{i}.npy") for i in range(2)]
    np.testing.assert_allclose(operands[0], ref["r"].reshape(32, 8), rtol=1e-5, atol=1e-5)
    m = next(numpy_helper.to_array(t) for t in onnx.load(str(ws.source_path)).graph.initializer if t.name == "m")
    np.testing.assert_array_equal(operands[1], m)
    done = _run_sh(out)
    assert done.returncode == 0 and "against ONNX tensor y: agrees" in done.stdout, done.stdout + done.stderr
    assert (out / "flags.txt").read_text().splitlines()[0].startswith("iree-compile dispatch.mlir ")
    _nudge(out / "iree_output0.npy")
    assert _run_sh(out).returncode == 1


def test_bad_dispatch_bad_workspace_and_a_used_folder_are_one_line(ws, tmp_path, capsys):
    cases = [(["extract", str(ws.root), "7", "--out", str(tmp_path / "a")], "no dispatch #7: the build has 3"),
             (["extract", str(ws.root), "-1", "--out", str(tmp_path / "a")], "no dispatch #-1"),
             (["extract", str(tmp_path), "1", "--out", str(tmp_path / "a")], "not an NPU Studio workspace")]
    used = tmp_path / "used"
    used.mkdir()
    (used / "mine.txt").write_text("the user's")
    cases.append((["extract", str(ws.root), "1", "--out", str(used)], "is not an empty folder"))
    for argv, reason in cases:
        assert cli_main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and reason in err, err
    assert not (tmp_path / "a").exists()
    assert [p.name for p in used.iterdir()] == ["mine.txt"] and (used / "mine.txt").read_text() == "the user's"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_substituted_executable_is_in_the_reproducer(ws, tmp_path):
    # A substitution (addf -> subf on the conv's bias) carries the workspace build's buffer layout;
    # the reproducer keeps it fitted to its own module, as a file of the folder.
    from npu_studio.core.executables import substitution as subs
    from npu_studio.core.executables.catalog import list_executables
    from npu_studio.core.workspace import substitutions as sub_records

    info = next(e for e in list_executables(ws) if e.dispatches == [CONV])
    source = info.source.read_text()
    at = source.rfind("arith.addf %in")
    subs.substitute(ws, info.name, sub_records.SOURCE, source[:at] + "arith.subf" + source[at + 10:]).run()
    out = tmp_path / "sub"
    repro = extract(Workspace.open(ws.root), CONV, out)
    assert repro.departs  # the substituted bias add departs from onnxruntime's tensor
    assert "arith.subf" not in (out / "dispatch.mlir").read_text()
    [kept] = (out / "substituted").iterdir()
    assert any(f.endswith(f"=substituted/{kept.name}") for f in repro.compile_flags)
    done = _run_sh(out)
    assert done.returncode == 0 and "against ONNX tensor r: DEPARTS" in done.stdout, done.stdout + done.stderr
    _nudge(out / "iree_output0.npy")
    assert _run_sh(out).returncode == 1
