"""The tiler chooses tiles by the simulator's cost: more SRAM or DRAM
bandwidth never makes a program slower, the lower bound that prunes the
search is never above a simulated schedule, and the budget ladder nests."""

from __future__ import annotations

import dataclasses

import pytest
from flowgen import flow_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npu_models import attention, fire
from tests.zoo_cache import zoo_flow

from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.plan.schedule import DispatchTiles, TiledOperand
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.target.target import load_target
from npu_studio.core.npu.plan.tile_search import (best_tiling, budget_ladder, candidates, lower_bound,
                                             simulated_cycles)
from npu_studio.core.npu.program.npu_ir import DispatchInfo
from npu_studio.core.npu.plan.tiling import Access, Loop, TilingProblem


def test_ladder_nests_and_holds_every_power_of_two():
    big, half = budget_ladder(512, 1 << 20), budget_ladder(512, 1 << 19)
    assert set(half) <= set(big)
    assert [b for b in big if b & (b - 1) == 0] == [1 << k for k in range(20, 8, -1)]
    assert len(big) == 4 * 11 + 1  # four steps per octave from 512 B to 1 MiB
    # not powers of two either: 3 MiB's ladder holds 1.5 MiB's
    assert set(budget_ladder(512, 3 << 20 >> 1)) <= set(budget_ladder(512, 3 << 20))
    assert budget_ladder(4096, 2048) == []


@st.composite
def targets(draw):
    rows = draw(st.sampled_from([4, 8, 16, 32]))
    return dataclasses.replace(
        load_target(), name="drawn",
        mac_rows=rows, mac_cols=draw(st.sampled_from([rows, 2 * rows])),
        dataflow=draw(st.sampled_from(["output-stationary", "weight-stationary"])),
        vector_lanes=draw(st.sampled_from([8, 16, 64])),
        sram_bytes=draw(st.sampled_from([16, 48, 64, 256, 1024, 3072])) * 1024,
        dram_bytes_per_cycle=draw(st.sampled_from([4, 8, 16, 64, 128])),
        dma_channels=draw(st.integers(1, 4)),
        dma_setup_cycles=draw(st.sampled_from([0, 32, 64])))


@pytest.fixture(scope="module")
def flows(example_flow):
    return [example_flow, flow_snapshot(fire()), flow_snapshot(attention())]


def _run(flow, target):
    p = run_npu_pipeline(flow, target)
    return [d.index for d in p.dispatches if d.legal], simulate(p).total_cycles


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(targets())
def test_halving_sram_or_bandwidth_never_makes_a_program_faster(flows, target):
    half_sram = dataclasses.replace(target, sram_bytes=target.sram_bytes // 2)
    half_bw = dataclasses.replace(target, dram_bytes_per_cycle=target.dram_bytes_per_cycle // 2)
    for flow in flows:
        legal, cycles = _run(flow, target)
        legal_half, cycles_half = _run(flow, half_sram)
        # A dispatch whose smallest tile no longer fits falls back to the CPU,
        # which may well be faster: compare programs that run the same dispatches.
        if legal_half == legal:
            assert cycles_half >= cycles, (flow.name, target, "SRAM halved")
        assert _run(flow, half_bw)[1] >= cycles, (flow.name, target, "bandwidth halved")


def _conv_tiles(f, oh, ow, c, kh, kw, sizes):
    loops = (Loop("F", f), Loop("OH", oh), Loop("OW", ow),
             Loop("C", c, True), Loop("KH", kh, True), Loop("KW", kw, True))
    h, w = oh + kh - 1, ow + kw - 1
    inp = Access("in", "input", 4, ((((3, 1),), c), (((1, 1), (4, 1)), h), (((2, 1), (5, 1)), w)))
    wgt = Access("w", "weight", 4, ((((0, 1),), f), (((3, 1),), c), (((4, 1),), kh), (((5, 1),), kw)))
    out = Access("out", "output", 4, ((((0, 1),), f), (((1, 1),), oh), (((2, 1),), ow)))
    ops = tuple(TiledOperand(a.name, a.role, a, None if a.role == "output" else f"d.{a.name}",
                             (f"s.{a.name}.0", f"s.{a.name}.1"), 4) for a in (inp, wgt, out))
    problem = TilingProblem(loops, (inp, wgt, out), (0, 2), (8, 8))
    tiles = DispatchTiles(0, "conv", loops, sizes, (0, 2, 1, 3, 4, 5), ops, ("d.y",))
    info = DispatchInfo(0, "conv", "", "conv", "linalg.conv_2d_nchw_fchw", True, "",
                        tuple(lp.name for lp in loops), tuple(lp.size for lp in loops),
                        tuple("reduction" if lp.reduction else "parallel" for lp in loops),
                        sizes, (), 0, 0, (), (), ())
    return problem, tiles, info


@settings(max_examples=60, deadline=None)
@given(st.tuples(*(st.integers(max(1, n // 4), n) for n in (16, 12, 12, 8)),
                 st.integers(1, 3), st.integers(1, 3)),
       targets())
def test_lower_bound_never_exceeds_the_simulated_cycles(sizes, target):
    _, tiles, info = _conv_tiles(16, 12, 12, 8, 3, 3, sizes)
    target = dataclasses.replace(target, sram_bytes=1 << 30)  # any tile fits
    assert lower_bound(tiles, info, target) <= simulated_cycles(tiles, info, target)


def test_one_tile_bound_is_exact_by_hand():
    """One tile on two DMA channels: the loads queue on the one load channel
    (a setup each, then the bytes), compute, one store on the other channel;
    the bound and the simulator agree with the sum by hand."""
    target = dataclasses.replace(load_target(), mac_rows=8, mac_cols=8, dram_bytes_per_cycle=16,
                                 dma_channels=2, dma_setup_cycles=32,
                                 dataflow="output-stationary")
    _, tiles, info = _conv_tiles(8, 4, 4, 2, 3, 3, (8, 4, 4, 2, 3, 3))
    load_in = 32 + 2 * 6 * 6 * 4 // 16  # the 2x6x6 input window, f32
    load_w = 32 + 8 * 2 * 3 * 3 * 4 // 16
    compute = 2 * 1 * (18 + 8 + 8 - 2)  # M=OH*OW=16 over 8 rows, N=F=8, K=C*KH*KW=18
    store = 32 + 8 * 4 * 4 * 4 // 16
    assert load_in + load_w + compute + store == 246
    assert lower_bound(tiles, info, target) == 246
    assert simulated_cycles(tiles, info, target) == 246


@settings(max_examples=25, deadline=None)
@given(st.tuples(*(st.integers(1, n) for n in (32, 24, 24, 16))), targets())
def test_search_returns_the_fastest_candidate(shape, target):
    """Pruning by the bound never loses the minimum: the chosen tiling
    simulates as fast as the fastest of all candidates, each simulated."""
    f, oh, ow, c = shape
    problem, _, _ = _conv_tiles(f, oh, ow, c, 3, 3, (1,) * 6)

    def dispatch_of(t):
        _, tiles, info = _conv_tiles(f, oh, ow, c, 3, 3, t.sizes)
        return tiles, info
    found = candidates(problem, target.sram_bytes)
    if not found:
        return
    every = min(simulated_cycles(*dispatch_of(t), target) for t, _ in found)
    assert simulated_cycles(*dispatch_of(best_tiling(problem, target, dispatch_of)), target) == every


@pytest.mark.slow
def test_resnet50_never_faster_with_less_sram_or_bandwidth():
    """The same property on a whole zoo model with branches (its residual
    adds run beside the convolutions): SRAM from 4 MiB down to 64 KiB,
    DRAM bandwidth from 128 down to 8 bytes a cycle."""
    flow = zoo_flow("resnet50")
    base = load_target()
    by_sram = [_run(flow, dataclasses.replace(base, sram_bytes=kib * 1024))
               for kib in (4096, 2048, 1024, 512, 256, 128, 64)]
    assert len({tuple(legal) for legal, _ in by_sram}) == 1  # every dispatch tiles on each
    cycles = [c for _, c in by_sram]
    assert cycles == sorted(cycles) and cycles[0] < cycles[-1]
    cycles = [_run(flow, dataclasses.replace(base, dram_bytes_per_cycle=b))[1]
              for b in (128, 64, 32, 16, 8)]
    assert cycles == sorted(cycles) and cycles[0] < cycles[-1]
