"""The light zoo's resnet50 through `check`: the one zoo-scale functional test."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from npu_studio.core.npu.numerics import check
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.workspace.workspace import Workspace
from tests.core.onnx_reference import run_onnxruntime
from tests.zoo_cache import zoo_workspace


@pytest.mark.slow
def test_resnet50_matches_onnxruntime_and_every_dispatch_matches_iree(tmp_path):
    # the run's shared compile of resnet50, copied: check caches its dispatch build in the workspace
    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    program = run_npu_pipeline(ws.snapshot_path("flow"))
    report = check(ws, program, seed=0, onnxruntime=False, iree_build=False)  # ORT below
    ort = run_onnxruntime(ws.source_path, report.inputs)[0]
    out = np.asarray(report.outputs[0], np.float64)
    assert np.max(np.abs(out - ort)) <= 1e-4 * max(1.0, np.max(np.abs(ort)))
    assert report.ok, "\n".join(report.summary_lines())
    # The light zoo's weights are constants, so the softmax output is nearly flat: what makes
    # the comparison meaningful is every NPU dispatch against IREE's own result on the same
    # inputs, on intermediates that are far from constant.
    npu = [d for d in report.dispatches if d.computed_by == "npu"]
    assert len(npu) >= 50
    assert sum(d.tiles for d in npu) == sum(p.num_tiles for p in program.dispatches if p.legal)
    for d in npu:
        assert d.max_error <= 1e-4 * max(1.0, d.scale), d
    assert max(d.scale for d in npu) > 1e6
