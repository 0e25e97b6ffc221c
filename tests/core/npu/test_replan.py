"""One flow text planned for many targets gives, target after target, the program
the plain pipeline gives (which parses, legalizes and schedules afresh each time)."""

from __future__ import annotations

import dataclasses

import pytest
from flowgen import flow_snapshot
from npu_models import attention, fire

from npu_studio.core.npu.plan.passes import NpuError, run_npu_pipeline
from npu_studio.core.npu.plan.replan import ModelPlanner
from npu_studio.core.npu.target.target import load_target
from npu_studio.core.npu.plan.tile_search import clear_memo


def _targets():
    base = load_target()
    tiny = dataclasses.replace(base, sram_bytes=16 * 1024)
    yield base
    yield dataclasses.replace(base, dram_bytes_per_cycle=8)  # often the same tiles: reused
    yield dataclasses.replace(base, clock_mhz=250, name="slow")
    yield dataclasses.replace(base, mac_rows=8, mac_cols=16, dataflow="weight-stationary")
    yield tiny
    yield dataclasses.replace(tiny, sram_bytes=4096)  # smallest tiles may not fit: sram-fit
    yield dataclasses.replace(base, dma_channels=1, dma_setup_cycles=0)
    yield dataclasses.replace(base, op_kinds=tuple(k for k in base.op_kinds if k != "conv"))
    yield dataclasses.replace(base, vector_functions=(("add", 1), ("max", 1)))  # no exp: CPU
    yield base  # back to the first legality: its program again


@pytest.mark.parametrize("model", ["example", "fire", "attention"])
def test_planner_gives_the_plain_pipelines_programs(model, example_flow):
    flow = {"example": lambda: example_flow, "fire": lambda: flow_snapshot(fire()),
            "attention": lambda: flow_snapshot(attention())}[model]()
    text = flow.read_text()
    planner = ModelPlanner(text)
    legal_counts = set()
    for target in _targets():
        clear_memo()  # the plain pipeline searches afresh
        try:
            want = run_npu_pipeline(text, target)
        except NpuError as e:
            with pytest.raises(NpuError, match=str(e)[:40]):
                planner.program(target)
            continue
        got = planner.program(target)
        assert got == want, (model, target)
        assert got.target == target
        legal_counts.add(sum(d.legal for d in got.dispatches))
    assert len(legal_counts) > 1  # the legality changes did change what runs on the NPU
