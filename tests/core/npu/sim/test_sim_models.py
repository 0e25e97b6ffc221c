"""The example simulates to completion on both bundled targets, with every
schedule and trace invariant (sim_checks). The light-zoo models get the same
checks in tests/core/npu/test_pipeline.py, on the program its zoo test builds."""

from __future__ import annotations

import pytest
from sim_checks import check_simulation

from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.target.target import load_target


@pytest.mark.parametrize("target", ["default", "tiny"])
def test_example_simulates_with_invariants(target, example_flow):
    p = run_npu_pipeline(example_flow, load_target(target))
    r = check_simulation(p)
    fallback = {d.index for d in p.dispatches if not d.legal}
    if fallback:
        assert r.engine_busy[r.engines.index("cpu")] > 0
    if len(fallback) < len(p.dispatches):
        assert r.engine_busy[r.engines.index("mac")] > 0
