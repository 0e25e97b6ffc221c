"""Our declarations of IREE's executable-plugin ABI, checked against IREE's own runtime.

A plugin built from npu_plugin_abi.h alone (abi_probe.c) is loaded by
iree-run-module, resolves the import of the NPU variant's replacement
executable, and computes the dispatch: the result must equal onnxruntime's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu_studio.core.compile.toolchain import runtime_tool
from npu_studio.core.npu.hal import plugin_build
from npu_studio.core.npu.hal.variant import build_variant
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.workspace.workspace import compile_model
from tests.core.onnx_reference import run_onnxruntime

HERE = Path(__file__).parent


def _add_model(path: Path) -> Path:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 8])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="Add_0")], "add", [a, b], [y])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def add_variant(tmp_path_factory):
    d = tmp_path_factory.mktemp("abi")
    ws = compile_model(_add_model(d / "add.onnx"), d / "ws")
    run_for_workspace(ws)
    return ws, build_variant(ws)


def _run_module(vmfb: Path, plugin: Path | None, inputs: list[Path], out: Path) -> subprocess.CompletedProcess:
    cmd = [str(runtime_tool("iree-run-module")), "--device=local-task", f"--module={vmfb}", "--function=add",
           *[f"--input=@{p}" for p in inputs], f"--output=@{out}"]
    if plugin is not None:
        cmd.insert(1, f"--executable_plugin={plugin}")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_plugin_from_our_abi_declarations_computes_the_dispatch(add_variant, cc, tmp_path):
    ws, variant = add_variant
    (record,) = variant.imports
    assert record.dispatch == 0 and [b.access for b in record.bindings] == ["readonly", "readonly", "writeonly"]
    probe = tmp_path / "abi_probe.so"
    subprocess.run([cc, *plugin_build.CFLAGS, "-I", str(plugin_build.SOURCE_DIR), "-o", str(probe),
                    str(HERE / "abi_probe.c")], check=True, capture_output=True)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (2, 8)).astype(np.float32), rng.uniform(-1, 1, (2, 8)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    proc = _run_module(variant.vmfb, probe, [tmp_path / "a.npy", tmp_path / "b.npy"], tmp_path / "y.npy")
    assert proc.returncode == 0, proc.stderr
    (ort,) = run_onnxruntime(ws.source_path, [a, b])
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), ort)


def test_variant_does_not_load_without_a_plugin(add_variant, tmp_path):
    _, variant = add_variant
    np.save(tmp_path / "a.npy", np.zeros((2, 8), np.float32))
    proc = _run_module(variant.vmfb, None, [tmp_path / "a.npy"] * 2, tmp_path / "y.npy")
    assert proc.returncode != 0 and "NOT_FOUND" in proc.stderr  # its import resolves nowhere


def test_our_plugin_resolves_the_import_and_refuses_without_a_model(add_variant, tmp_path):
    _, variant = add_variant
    np.save(tmp_path / "a.npy", np.zeros((2, 8), np.float32))
    proc = _run_module(variant.vmfb, plugin_build.plugin_path(), [tmp_path / "a.npy"] * 2, tmp_path / "y.npy")
    assert proc.returncode != 0
    assert "npu plugin: dispatch #0: no NPU model attached" in proc.stderr
