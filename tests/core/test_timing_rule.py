"""When a kernel timing has settled, and when two timings differ measurably (core/run/kernel_timing.py).

Quartiles are worked out by hand with the inclusive rule (position (n - 1) * p in the
sorted samples, linear between neighbours).
"""

from __future__ import annotations

import pytest

from npu_studio.core.run import kernel_timing as kt
from npu_studio.core.run.kernel_timing import KernelTiming, Timing, difference, next_batch

FIVE_TENS_FIVE_ELEVENS = [10.0] * 5 + [11.0] * 5  # q1 10 (position 2.25), q3 11 (6.75), median 10.5


def test_spread_is_the_interquartile_range_over_the_median():
    t = Timing(FIVE_TENS_FIVE_ELEVENS)
    assert t.quartiles_ms == (10.0, 11.0) and t.median_ms == 10.5
    assert t.spread == pytest.approx(1 / 10.5)  # 9.5%: under the 10% target
    assert t.settled and next_batch(t) == 0 and t.stopped == "settled"
    assert str(t) == "10.500 ms (IQR 10%, n=10)"
    nine = Timing([float(x) for x in range(1, 10)])  # q1 at position 2 -> 3, q3 at 6 -> 7, median 5
    assert nine.quartiles_ms == (3.0, 7.0) and nine.spread == pytest.approx(0.8)


def test_a_timing_repeats_until_settled_or_a_limit_and_says_which():
    few = Timing([10.0] * 5)
    assert not few.settled and next_batch(few) == kt.BATCH and few.stopped == ""  # 5 < 10 repetitions
    noisy = Timing([10.0] * 5 + [13.0] * 5)  # IQR 3 / median 11.5 = 26%
    assert noisy.spread == pytest.approx(3 / 11.5) and not noisy.settled
    assert next_batch(noisy) == kt.BATCH
    assert next_batch(noisy, max_repetitions=12) == 2  # a last short batch up to the limit
    at_limit = Timing([10.0, 13.0] * 20)
    assert next_batch(at_limit) == 0 and at_limit.stopped == "stopped at 40 repetitions"
    slow = Timing([10.0] * 5 + [13.0] * 5, seconds=31.0)
    assert next_batch(slow) == 0 and slow.stopped == "stopped at the 30 s limit"
    assert str(slow) == "11.500 ms (IQR 26%, n=10, not settled: stopped at the 30 s limit)"
    assert next_batch(Timing([]), max_seconds=0.0) == kt.BATCH  # a first batch always runs


def test_a_difference_is_measurable_only_when_the_middle_halves_do_not_overlap():
    plain = Timing(FIVE_TENS_FIVE_ELEVENS)
    slower = Timing([12.0] * 5 + [13.0] * 5)  # q1 12 > plain's q3 11
    d = difference(plain, slower)
    assert d.measurable and d.ratio == pytest.approx(12.5 / 10.5) and str(d) == "ratio 1.19"
    overlapping = Timing([10.5] * 5 + [11.5] * 5)  # q1 10.5 <= plain's q3 11
    d = difference(plain, overlapping)
    assert not d.measurable and d.ratio == pytest.approx(11 / 10.5)
    assert str(d) == "no measurable difference (the middle halves of the runs overlap)"


def test_three_noisy_runs_are_not_reported_as_a_ratio():
    """The issue's case: 3 runs each with a 20-43% spread printed as 'ratio 4.92'."""
    plain = Timing([1.0, 1.2, 0.8])
    sub = Timing([4.92, 5.9, 3.9])
    k = KernelTiming("k", plain, sub)
    line = k.format()
    assert "ratio" not in line
    assert line.endswith("no measurable difference (too few repetitions, 3 and 3 of the 10 needed)")
    assert k.ratio == pytest.approx(4.92)  # still in the JSON, beside measurable = False
    data = k.to_json()
    assert data["measurable"] is False and data["ratio"] == pytest.approx(4.92)


def test_timings_alternate_plain_and_substituted_until_each_is_done(monkeypatch):
    """The loop, with iree-benchmark-module replaced by hand-made samples: plain settles, the other never."""
    calls = []

    def fake_run(args, what, repetitions, min_time):
        calls.append((args[0], repetitions))
        values = [10.0] * repetitions if args[0] == "plain" else [10.0, 14.0] * (repetitions // 2) + [10.0] * (repetitions % 2)
        return Timing(values)

    monkeypatch.setattr(kt, "_run_benchmark", fake_run)
    plain, sub = kt.time_pair(["plain"], ["sub"], (None, None), kt.Limits(max_repetitions=17))
    # interleaved to the end: plain settles after 10, then keeps pace with the other one
    assert calls == [("plain", 5), ("sub", 5)] * 3 + [("plain", 2), ("sub", 2)]
    assert len(plain.samples_ms) == 17 and plain.stopped == "settled"
    assert len(sub.samples_ms) == 17 and sub.stopped == "stopped at 17 repetitions"


def test_a_ratio_inside_the_noise_of_unsettled_timings_is_not_a_number():
    """The issue's case: both timings 'not settled, IQR 52%/51%', yet 'ratio 3.13' was printed."""
    plain = Timing([8.0] * 5 + [13.0] * 5)  # q1 8, q3 13, median 10.5: IQR 48%
    sub = Timing([25.0] * 5 + [40.0] * 5)  # q1 25, q3 40, median 32.5: IQR 46%; the middle halves do not overlap
    assert not plain.settled and not sub.settled
    k = KernelTiming("k", plain, sub, plain, sub)
    for d in (k.kernel_difference, k.model_difference):
        assert not d.measurable and d.ratio == pytest.approx(32.5 / 10.5)
        assert str(d) == "no measurable difference (the timings did not settle: IQR 48% and 46%, over the 10% needed)"
    assert "ratio" not in k.format() and "3.1" not in k.format()
    settled = Timing([31.0] * 5 + [32.0] * 5)  # IQR 1 / 31.5 = 3%: a settled timing, clear of plain's
    assert difference(Timing(FIVE_TENS_FIVE_ELEVENS), settled).measurable
