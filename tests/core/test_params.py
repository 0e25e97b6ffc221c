"""Weights outside the IR: a parameter archive per workspace (core/compile/params.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_studio.cli_commands.run import run_workspace
from npu_studio.core.compile.importer import import_model
from npu_studio.core.compile.params import DEFAULT_THRESHOLD_BYTES, ParameterArchive, ParamOptions, stats
from npu_studio.core.errors import ImportFailed
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.workspace.workspace import Workspace, compile_model

from .onnx_reference import run_onnxruntime

MB = 1 << 20


def matmul_model(k: int, n: int, *, seed: int = 0, as_constant_node: bool = False) -> onnx.ModelProto:
    """x[2,k] @ W[k,n] + b[n], relu; W scaled so outputs stay near 1 (1e-4 is then a real bound)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((k, n), dtype=np.float32) / np.float32(np.sqrt(k))).astype(np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["y"], name="proj"),
        helper.make_node("Add", ["y", "b"], ["z"], name="bias"),
        helper.make_node("Relu", ["z"], ["out"], name="act"),
    ]
    inits = [numpy_helper.from_array(b, "b")]
    if as_constant_node:
        nodes.insert(0, helper.make_node("Constant", [], ["W"], name="weights", value=numpy_helper.from_array(w, "W")))
    else:
        inits.insert(0, numpy_helper.from_array(w, "W"))
    graph = helper.make_graph(
        nodes, "proj", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def _weights(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            arrays[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return arrays


def _check_against_onnxruntime(ws: Workspace, model_path: Path) -> None:
    _, inputs, outputs = run_workspace(ws, None, seed=3)
    (expected,) = run_onnxruntime(model_path, inputs)
    np.testing.assert_allclose(outputs[0], expected, atol=1e-4, rtol=0)


def test_large_weights_go_to_the_archive_and_small_ones_stay_inline(tmp_path):
    path = tmp_path / "proj.onnx"
    onnx.save(matmul_model(256, 128), str(path))  # W: 128 KiB, b: 512 bytes
    ws = compile_model(path, tmp_path / "ws")

    assert ws.manifest.params == {"archive": "params.irpa", "threshold": DEFAULT_THRESHOLD_BYTES,
                                  "count": 1, "bytes": 256 * 128 * 4}
    imported = ws.imported_path.read_text()
    assert 'util.global private @W = #stream.parameter.named<"model"::"W"> : tensor<256x128xf32>' in imported
    assert "dense_resource<b>" in imported or 'dense_resource<"b">' in imported or "onnx.Constant" in imported
    archive = ParameterArchive(ws.params_path)
    assert archive.names() == ["W"]
    np.testing.assert_array_equal(archive.array("W", (256, 128), "float32"), _weights(path)["W"])
    # Node names survive into the phases as provenance, weights as named references.
    flow = ws.snapshot_path("flow").read_text()
    assert '#stream.parameter.named<"model"::"W">' in flow
    (rec,) = index_file(ws.snapshot_path("flow"), "flow").dispatches
    assert {"proj", "bias", "act"} <= set(rec.onnx_nodes)
    _check_against_onnxruntime(ws, path)


def test_threshold_is_configurable_and_recorded(tmp_path):
    path = tmp_path / "proj.onnx"
    onnx.save(matmul_model(64, 32), str(path))  # W: 8 KiB
    inline = compile_model(path, tmp_path / "inline")
    assert inline.manifest.params is None and inline.params_path is None
    moved = Workspace.create(path, tmp_path / "moved", params=ParamOptions(threshold_bytes=4096))
    assert moved.manifest.params["threshold"] == 4096
    assert ParameterArchive(moved.params_path).names() == ["W"]
    off = Workspace.create(path, tmp_path / "off", params=None)
    assert off.manifest.params is None


def test_constant_nodes_holding_weights_are_moved_too(tmp_path):
    path = tmp_path / "const.onnx"
    onnx.save(matmul_model(256, 128, as_constant_node=True), str(path))
    ws = compile_model(path, tmp_path / "ws")
    np.testing.assert_array_equal(ParameterArchive(ws.params_path).array("W", (256, 128), "float32"),
                                  _weights(path)["W"])
    _check_against_onnxruntime(ws, path)


def test_stats_match_numpy_over_chunks():
    values = np.random.default_rng(5).standard_normal((1000, 37)).astype(np.float32)
    s = stats(values, bins=10, chunk=999)  # chunks that cut rows: the sums must not care
    assert s.minimum == values.min() and s.maximum == values.max()
    assert s.mean == pytest.approx(float(values.astype(np.float64).mean()), abs=1e-9)
    assert s.std == pytest.approx(float(values.astype(np.float64).std()), abs=1e-9)
    counts, edges = np.histogram(values, bins=np.linspace(values.min(), values.max(), 11))
    np.testing.assert_array_equal(s.histogram[0], counts)
    assert int(s.histogram[0].sum()) == values.size


def test_external_data_shorter_than_its_shape_is_one_line(tmp_path):
    path = tmp_path / "ext.onnx"
    onnx.save(matmul_model(256, 128), str(path), save_as_external_data=True, location="ext.bin",
              size_threshold=1024)
    with open(tmp_path / "ext.bin", "r+b") as f:
        f.truncate(1000)
    from npu_studio.core.errors import StudioError

    with pytest.raises(StudioError) as err:
        compile_model(path, tmp_path / "ws")
    assert "ext.bin" in str(err.value) and "\n" not in str(err.value)


def _dir_size(root: Path, skip: str) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and skip not in p.parts)


@pytest.fixture(scope="module")
def big_model(tmp_path_factory) -> Path:
    """A 200 MiB initializer (7240 x 7240 f32)."""
    path = tmp_path_factory.mktemp("big") / "big.onnx"
    onnx.save(matmul_model(7240, 7240), str(path))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("external", [False, True], ids=["embedded", "external-data"])
def test_a_200mb_weight_stays_out_of_every_snapshot(big_model, tmp_path, external):
    path = big_model
    if external:
        path = tmp_path / "big_ext.onnx"
        onnx.save(onnx.load(str(big_model)), str(path), save_as_external_data=True, location="big_ext.bin")
        assert path.stat().st_size < MB
    weights = 7240 * 7240 * 4
    ws = compile_model(path, tmp_path / "ws")

    for phase, snap in ws.snapshots().items():
        assert snap.stat().st_size < 5 * MB, phase
    assert _dir_size(ws.root, "source") < 1.3 * weights + 50 * MB
    # The kept model is a hard link on this filesystem; external data is not
    # linked (ONNX refuses to load external data with several links).
    assert os.stat(ws.root / "source" / path.name).st_nlink == 2
    assert os.stat(path).st_nlink == 2
    onnx.load(str(path))  # the user's model still loads, external data and all
    _check_against_onnxruntime(ws, path)

    if not external:
        return
    # Resume from flow: the archive is read again by the new build.
    flow = ws.snapshot_path("flow").read_text()
    edited = flow.replace("arith.addf", "arith.subf", 1)
    assert edited != flow
    ws.resume("flow", edited)
    _, inputs, outputs = run_workspace(ws, None, seed=3)
    model = onnx.load(str(path))
    w = numpy_helper.to_array(model.graph.initializer[0])
    b = numpy_helper.to_array(model.graph.initializer[1])
    np.testing.assert_allclose(outputs[0], np.maximum(inputs[0] @ w - b, 0), atol=1e-4, rtol=0)


def test_npu_plan_counts_a_parameter_as_weight_bytes_in_dram(tmp_path):
    from npu_studio.core.npu.store.workspace_io import run_for_workspace

    path = tmp_path / "proj.onnx"
    onnx.save(matmul_model(256, 128), str(path))
    ws = compile_model(path, tmp_path / "ws")
    program = run_for_workspace(ws)
    (dispatch,) = program.dispatches
    assert dispatch.legal, dispatch.reason
    weights = [b for b in program.buffers if b.placement == "dram" and b.kind == "weight"]
    # W (256x128 f32) comes from the archive; it is planned like any weight: its bytes in DRAM.
    assert any(b.shape == (256, 128) and b.size == 256 * 128 * 4 for b in weights)


def test_big_weights_are_cut_out_of_the_model_bytes_and_found_at_their_ranges(tmp_path):
    from npu_studio.core.compile.onnx_wire import model_bytes_without_large_data

    path = tmp_path / "proj.onnx"
    onnx.save(matmul_model(256, 128), str(path))
    stripped, cut = model_bytes_without_large_data(path, 64 * 1024)
    data = path.read_bytes()
    original = onnx.load(str(path))  # onnx's own parser is the truth
    parsed = onnx.ModelProto()
    parsed.ParseFromString(stripped)
    assert len(stripped) < len(data) - 256 * 128 * 4
    assert set(cut) == {t.name for t in original.graph.initializer if len(t.raw_data) >= 64 * 1024} != set()
    for tensor in original.graph.initializer:
        if tensor.name in cut:
            offset, length = cut[tensor.name]
            assert data[offset:offset + length] == numpy_helper.to_array(tensor).tobytes()
            tensor.ClearField("raw_data")
    assert parsed == original


def test_embedded_weight_shorter_than_its_shape_is_refused_naming_it(tmp_path):
    model = matmul_model(256, 128)
    big = max(model.graph.initializer, key=lambda t: len(t.raw_data))
    big.raw_data = big.raw_data[: len(big.raw_data) - 4 * 128]
    path = tmp_path / "short.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ImportFailed) as info:
        import_model(path, tmp_path / "out.mlir", ParamOptions())
    assert str(path) in str(info.value) and big.name in str(info.value)
