"""Substitution on light resnet50: one conv executable, unedited, gives bit-identical outputs."""

from __future__ import annotations

import shutil

import pytest

from npu_studio.core.executables import substitution as subs
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.numeric_gate import gate_substitution
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.core.workspace.workspace import Workspace

from ..zoo_cache import zoo_workspace


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
    assert report.bit_identical and report.passed
    assert report.onnxruntime == "compared"
    assert report.outputs[0].substituted_vs_onnxruntime < 1e-3
