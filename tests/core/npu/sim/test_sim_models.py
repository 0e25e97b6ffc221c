"""The example and resnet50 (light zoo) simulate to completion on both
bundled targets, with every schedule invariant (sim_checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sim_checks import check_schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from flowgen import flow_snapshot, zoo_model  # noqa: E402

from npu_studio.core.npu.passes import run_npu_pipeline  # noqa: E402
from npu_studio.core.npu.sim import simulate  # noqa: E402
from npu_studio.core.npu.target import load_target  # noqa: E402


@pytest.mark.parametrize("target", ["default", "tiny"])
@pytest.mark.parametrize("model", ["example", "resnet50"])
def test_model_simulates_with_invariants(model, target, example_flow):
    flow = example_flow if model == "example" else flow_snapshot(zoo_model(model))
    p = run_npu_pipeline(flow, load_target(target))
    r = simulate(p)
    check_schedule(p, r)
    assert r.total_cycles > 0 and len(r.dispatches) == len(p.dispatches)
    fallback = {d.index for d in p.dispatches if not d.legal}
    assert {d.index for d in r.dispatches if d.bound == "cpu"} == fallback
    if fallback:
        assert r.engine_busy[r.engines.index("cpu")] > 0
    if len(fallback) < len(p.dispatches):
        assert r.engine_busy[r.engines.index("mac")] > 0
