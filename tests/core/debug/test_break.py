"""`trace --break N`: IREE's own --iree-flow-break-dispatch build, its output against the ONNX model.

Truths: the layer values computed here with numpy from the model's own
initializers (relu(x W0 + b0), ...), the broken module run by the test
itself (IREE's output), the substitution the test makes (addf -> subf moves
a value by at most twice its bias).
"""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from npu_studio.cli import main as cli_main
from npu_studio.core.debug.dispatch_break import break_after
from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import Workspace, compile_model

from . import trace_models as models


@pytest.fixture(scope="module")
def mlp_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlp_break")
    return compile_model(models.mlp_bias(d / "mlp_bias.onnx"), d / "ws")


@pytest.fixture
def mlp_ws(mlp_build, tmp_path):
    shutil.copytree(mlp_build.root, tmp_path / "ws")
    return Workspace.open(tmp_path / "ws")


def _layers(ws, x: np.ndarray) -> list[np.ndarray]:
    """Each layer's value by numpy: what dispatch #i computes."""
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(ws.source_path)).graph.initializer}
    values, h = [], x[0].astype(np.float64)
    for i in range(3):
        a = h @ init[f"W{i}"] + init[f"b{i}"]
        h = a if i == 2 else np.maximum(a, 0)
        values.append(h)
    return values


def _digest(root) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_each_break_returns_that_layer(mlp_ws):
    ws = mlp_ws
    x = random_inputs(pick_function(ws.snapshot_path("input")), 3)
    layers = _layers(ws, x)
    for index in (1, 2):
        result = break_after(ws, index, x)
        assert result.flag == f"--iree-flow-break-dispatch=@mlp_bias:{index}"
        d = result.dispatch
        assert d.onnx_tensor == ("h1" if index == 1 else "a2") and not d.departs
        [out] = run_vmfb(variants.get(ws, result.variant).vmfb_path, "mlp_bias", x)  # IREE's own output
        np.testing.assert_allclose(out, layers[index], rtol=1e-4, atol=1e-4)
        assert d.shape == [4, 32] and sum(d.histogram["counts"]) == 4 * 32
        assert d.stats["max"] == pytest.approx(float(out.max())) and d.stats["min"] == pytest.approx(float(out.min()))
    # built once: a second break at the same dispatch reuses the variant
    before = variants.get(ws, "break-1").build.vmfb
    mtime = (ws.root / before).stat().st_mtime_ns
    break_after(ws, 1, x)
    assert (ws.root / before).stat().st_mtime_ns == mtime


def test_a_substituted_executable_departs_at_its_break(mlp_ws):
    ws = mlp_ws
    info = next(e for e in list_executables(ws) if e.dispatches == [1])
    source = info.source.read_text()
    at = source.rfind("arith.addf %in")
    subs.substitute(ws, info.name, sub_records.SOURCE, source[:at] + "arith.subf" + source[at + 10:]).run()
    x = random_inputs(pick_function(ws.snapshot_path("input")), 4)
    before = break_after(ws, 0, x).dispatch
    assert not before.departs
    result = break_after(ws, 1, x)
    d = result.dispatch
    assert d.departs and d.first_differing and any("fitted" in n for n in result.notes)
    b1 = numpy_helper.to_array(next(t for t in onnx.load(str(ws.source_path)).graph.initializer if t.name == "b1"))
    assert 0 < d.max_abs_error <= 2 * float(b1.max()) + 1e-5
    # the broken build computes relu(h0 W1 - b1): the substitution ran, fitted, not garbage
    h0 = _layers(ws, x)[0]
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(ws.source_path)).graph.initializer}
    [out] = run_vmfb(variants.get(ws, result.variant).vmfb_path, "mlp_bias", x)
    np.testing.assert_allclose(out, np.maximum(h0 @ init["W1"] - b1, 0), rtol=1e-4, atol=1e-4)


def test_cli_break_json_and_bad_index(mlp_ws, capsys):
    assert cli_main(["trace", str(mlp_ws.root), "--break", "0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "npu-studio.break" and data["dispatch"]["onnx_tensor"] == "h0"
    before = _digest(mlp_ws.root)
    assert cli_main(["trace", str(mlp_ws.root), "--break", "9"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no dispatch #9" in err
    assert _digest(mlp_ws.root) == before


@pytest.mark.slow
def test_resnet50_break_past_constant_evaluation(tmp_path):
    # resnet50's folded batch-norm constants go through IREE's constant evaluation, whose JIT
    # modules the break flag also reaches: the break build turns it off.
    from tests.zoo_cache import zoo_workspace

    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    result = break_after(ws, 10)
    assert result.flag == "--iree-flow-break-dispatch=@resnet50:10"
    assert result.dispatch.paired and not result.dispatch.departs
    assert result.dispatch.scale > 100  # far from trivial values
