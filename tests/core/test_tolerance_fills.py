"""The tolerance rule's scale leaves out fills (run/tolerance.py): hand-computed cases."""

from __future__ import annotations

import numpy as np

from npu_studio.core.run.tolerance import Tolerance, max_error, scale_of, weighted_errors

F32_MAX = float(np.finfo(np.float32).max)


def test_data_without_fills_keeps_its_largest_magnitude():
    assert scale_of(np.array([0.5, -3.0, 2.0], np.float32)) == 3.0
    # a jump below 1 is no fill: small values beside larger ones are data
    assert scale_of(np.array([1e-9, 0.5], np.float32)) == 0.5
    # 999 times the rest is still data
    assert scale_of(np.array([2.0, -1998.0], np.float32)) == 1998.0


def test_a_mask_and_a_padding_fill_are_not_the_scale():
    scores = np.array([[0.7, -1e9 + 0.3], [-2.5, -1e9 - 4.0]], np.float32)
    assert scale_of(scores) == 2.5
    assert scale_of(np.array([-F32_MAX, 4.0, -1.0], np.float32)) == 4.0
    assert scale_of(np.array([-F32_MAX, 1e9, 0.25], np.float32)) == 0.25


def test_integers_have_no_fills():
    assert scale_of(np.array([1, 100000], np.int32)) == 100000.0


def test_a_fill_is_judged_by_its_own_magnitude_and_the_data_by_theirs():
    ref = np.array([1.5, -1e9, 0.25], np.float32)
    rule = Tolerance(1e-4)
    # f32 rounding of -1e9 is 64: within 1e-4 of its own magnitude (1e5)
    ok = np.array([1.5, -1e9 + 64, 0.25], np.float64)
    err, scale = max_error(ok, ref)
    assert scale == 1.5 and err <= rule.bound(scale)
    # 8 off in a data element: 8 > 1e-4 * 1.5, departs (with -1e9 as the scale it agreed: bound 1e5)
    bad = np.array([1.5 + 8, -1e9, 0.25], np.float64)
    err, scale = max_error(bad, ref)
    assert err == 8.0 and err > rule.bound(scale)
    # a fill off by more than 1e-4 of itself departs too: 2e6 off -1e9 weighs 2e6 * 1.5 / 1e9
    far = np.array([1.5, -1e9 + 2e6, 0.25], np.float64)
    w = weighted_errors(far, ref)
    assert np.isclose(w[1], 2e6 * 1.5 / 1e9) and w[1] > rule.bound(1.5)
