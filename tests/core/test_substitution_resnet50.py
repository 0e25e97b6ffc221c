"""Substitution on light resnet50: one conv executable, unedited, gives bit-identical outputs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.numeric_gate import gate_substitution
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace

from ..zoo_cache import zoo_workspace
from .onnx_reference import run_onnxruntime


@pytest.mark.slow
def test_unedited_conv_executable_of_resnet50_is_bit_identical(tmp_path):
    # the run's shared compile of resnet50 (other tests index it), copied: this test changes it
    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    infos = list_executables(ws)
    conv = next(i for i in infos if i.ops.startswith("conv") and len(i.dispatches) == 1)
    assert conv.onnx_nodes  # tied to its ONNX node(s)
    result = subs.substitute(ws, conv.name, sub_records.SOURCE, conv.source.read_text()).run()
    assert f"hal.executable `{conv.name}` substituted" in result.stderr
    report = gate_substitution(ws, conv.name, sub_records.SOURCE)
    assert report.bit_identical
    assert report.onnxruntime == "compared"
    assert report.outputs[0].substituted_vs_onnxruntime < 1e-3
    # The light zoo's weights are constants: onnxruntime's softmax output is 0.001 everywhere, so this
    # output cannot tell a right substitution from a wrong one, and the gate says so instead of PASS.
    [ort] = run_onnxruntime(ws.source_path, random_inputs(pick_function(ws.snapshot_path("input")), 0))
    assert np.ptp(ort) == 0
    assert report.status == "CANNOT TELL" and not report.passed
    assert report.outputs[0].plain_flat == f"is constant (all {float(ort.flat[0]):.7g})"
