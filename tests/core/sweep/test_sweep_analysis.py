"""Pareto fronts, the knee, sensitivity and the checks on hand-made tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu_studio.core.sweep.analysis import (front, knee, monotonicity, pareto_mask, sanity,
                                            sensitivity)


def _row(point, sram, bw, cycles, energy, model="m", status="ok", **more):
    return {"model": model, "point": point, "sram.size_kib": sram, "dram.bytes_per_cycle": bw,
            "status": status, "cycles": cycles, "energy_pj": energy, "meets_constraints": True, **more}


# (cycles, energy): by hand, 0 (1, 9), 1 (2, 5), 3 (4, 2) and 5 (9, 1) are on the front; 2 (3, 6)
# is beaten by 1, 4 (5, 2) by 3 (equal energy, fewer cycles), 6 (2, 5) equals 1 and stays.
HAND = [(1, 9), (2, 5), (3, 6), (4, 2), (5, 2), (9, 1), (2, 5)]


def test_pareto_front_of_a_hand_made_table():
    mask = pareto_mask(np.array(HAND))
    assert mask.tolist() == [True, True, False, True, False, True, True]
    rows = [_row(i, 0, 0, c, e) for i, (c, e) in enumerate(HAND)]
    assert [r["point"] for r in front(rows, ("cycles", "energy_pj"))] == [0, 1, 6, 3, 5]


def test_three_objectives_and_the_2d_path_agree_with_brute_force():
    rng = np.random.default_rng(3)
    for k in (2, 3):
        pts = rng.integers(0, 6, size=(200, k)).astype(float)
        brute = [not any(np.all(q <= p) and np.any(q < p) for q in pts) for p in pts]
        assert pareto_mask(pts).tolist() == brute


def test_infeasible_and_constraint_breaking_rows_are_off_the_front():
    rows = [_row(0, 0, 0, 1, 1, status="infeasible"), _row(1, 0, 0, 2, 2),
            _row(2, 0, 0, 1, 1, meets_constraints=False)]
    assert [r["point"] for r in front(rows, ("cycles", "energy_pj"))] == [1]


def test_knee():
    # the front (0, 10), (1, 2), (10, 0): (1, 2) is farthest from the line through the ends
    rows = [_row(i, 0, 0, c, e) for i, (c, e) in enumerate([(0, 10), (1, 2), (10, 0)])]
    assert knee(front(rows, ("cycles", "energy_pj")), "cycles", "energy_pj")["point"] == 1


def test_non_monotone_stub_metric_is_reported():
    rows = [_row(i, sram, bw, 100, 1.0, stub=stub) for i, (sram, bw, stub) in enumerate(
        [(16, 8, 5), (32, 8, 4), (64, 8, 7), (16, 16, 3), (32, 16, 3), (64, 16, 1)])]
    found = monotonicity(rows, ["sram.size_kib", "dram.bytes_per_cycle"],
                         rules=(("sram.size_kib", "stub"), ("dram.bytes_per_cycle", "cycles")))
    assert [(v.parameter, v.metric, v.point_a, v.point_b, v.value_a, v.value_b) for v in found] == [
        ("sram.size_kib", "stub", 1, 2, 4, 7)]
    assert "more sram.size_kib gave more stub: point 1" in str(found[0])


def test_negative_and_nan_metrics_are_reported():
    rows = [_row(0, 1, 1, -5, 1.0), _row(1, 1, 1, 5, math.nan), _row(2, 1, 1, -1, 1.0,
                                                                     status="infeasible")]
    assert sanity(rows, ["cycles", "energy_pj"]) == [
        "m: point 0: cycles is negative (-5)", "m: point 1: energy_pj is NaN"]


def test_sensitivity_holds_the_others_at_the_base():
    rows = [_row(i, s, b, s * 10 + b, 0.0) for i, (s, b) in enumerate(
        [(16, 8), (32, 8), (64, 8), (16, 16), (32, 16), (64, 16)])]
    # base: 32 KiB (on the grid) and 12 bytes/cycle (between 8 and 16: the nearer, lower one)
    got = sensitivity(rows, ["sram.size_kib", "dram.bytes_per_cycle"],
                      {"sram.size_kib": 32, "dram.bytes_per_cycle": 12}, "cycles", "m")
    assert got == {"sram.size_kib": [(16, 168), (32, 328), (64, 648)],
                   "dram.bytes_per_cycle": [(8, 328), (16, 336)]}


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_fronts(n):
    assert pareto_mask(np.zeros((n, 2))).tolist() == [True] * n
