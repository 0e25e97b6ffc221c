"""Verdicts that explain themselves (core/run/numeric_gate.py, tolerance.py, npu/numerics/check.py).

Every expected number is worked out by hand in the test from the arrays it builds.
"""

from __future__ import annotations

import numpy as np
import pytest

from npu_studio.core.npu.numerics.check import _compare, final_line
from npu_studio.core.run.numeric_gate import (CANNOT_TELL, FAIL, IDENTICAL, PASS, GateReport, compare_arrays,
                                              verdict_short, verdict_summary)
from npu_studio.core.run.tolerance import element_text, flat_reference

F32_ULP_AT_4 = 2.0 ** -21  # float32 has 23 fraction bits: one ULP of 4 = 2^(2-23)


def _report(*outputs) -> GateReport:
    return GateReport("f", 1e-5, "hand-made arrays", list(outputs), "not an ONNX model")


def test_error_is_relative_to_the_outputs_scale_not_to_a_near_zero_element():
    plain = np.array([1e-6, 2.0, -4.0, 0.5], np.float32)
    sub = plain.copy()
    sub[0] = np.float32(1.2e-6)  # 20% off, at an element a millionth of the scale
    sub[2] = np.nextafter(np.float32(-4.0), np.float32(-5.0))  # one ULP off (away from 0) at the largest element
    # per element, element 0 is the "worst" by far: the misleading number the gate no longer shows
    per_element = np.abs(sub.astype(np.float64) - plain) / np.abs(plain.astype(np.float64))
    assert per_element[0] == pytest.approx(0.2, rel=1e-5) and per_element.argmax() == 0

    o = compare_arrays(plain, sub, tolerance=1e-5)
    assert o.scale == 4.0
    assert o.max_abs == F32_ULP_AT_4
    assert o.rel_error == F32_ULP_AT_4 / 4.0 == 2.0 ** -23
    assert o.outside == 0 and o.status == PASS
    # the worst element is the one with the largest absolute error, with both values
    assert (o.worst[0].index, o.worst[0].plain, o.worst[0].substituted) == ((2,), -4.0, float(sub[2]))
    assert [w.index for w in o.worst] == [(2,), (0,)]  # elements that agree are not listed
    # ULPs: one on the elements of at least 1% of the scale; near zero a tiny error is millions of ULPs
    assert o.max_ulp == 1
    ulp_at_1e6 = float(np.spacing(np.float32(1e-6)))
    assert o.max_ulp_all == round((float(sub[0]) - float(plain[0])) / ulp_at_1e6) > 1e6

    text = _report(o).format()
    assert f"max abs error {F32_ULP_AT_4:.3g} = {2.0 ** -23:.3g} of the output's scale (largest |plain| 4)" in text
    assert "worst at [2]: plain -4, substituted -4.0000005" in text
    assert "max ULP 1 on elements of at least 1% of the scale" in text
    assert text.splitlines()[-1].startswith("verdict: PASS: max abs error")
    assert "max rel" not in text and "0.2 " not in text  # the per-element 20% appears nowhere


@pytest.mark.parametrize("values, expected", [
    (np.zeros((2, 3), np.float32), "is constant (all 0.0)"),
    (np.full(1000, 0.001, np.float32), "is constant (all 0.001)"),  # light resnet50's softmax output
    (np.array(0.0, np.float32), "is a single 0.0"),
    (np.full(4, np.nan, np.float32), "has no finite value"),
    (np.zeros(0, np.float32), "is empty"),
])
def test_a_flat_reference_is_flagged_and_never_passes(values, expected):
    o = compare_arrays(values, values.copy(), tolerance=1e-5)
    assert o.bit_identical and o.plain_flat == expected
    assert o.status == CANNOT_TELL and not o.passed
    report = _report(o)
    assert report.status == CANNOT_TELL and not report.passed
    v = report.verdict()
    assert v["status"] == CANNOT_TELL and v["passed"] is False
    assert verdict_summary(v).startswith(f"CANNOT TELL: the plain build's output0 {expected}")
    assert verdict_short(v) == "CANNOT TELL (flat reference)"
    assert f"the plain build's output {expected}: the check cannot tell" in report.format()


def test_nearly_constant_reference_cannot_tell_but_a_varying_one_can():
    # from 1 to 1 + 1e-5: the constant 1 + 5e-6 is within 5e-6 of every element, under 1e-5 * max(1, |p|)
    nearly = np.array([1.0, 1.0 + 5e-6, 1.0 + 1e-5])
    assert flat_reference(nearly, 1e-5 * np.maximum(1.0, nearly)).startswith("is nearly constant (from 1.0 to 1.00001)")
    # the same spread against a tighter tolerance is a real check
    assert flat_reference(nearly, 1e-6) is None
    varying = np.array([1.0, 1.1])
    assert flat_reference(varying, 1e-5) is None
    assert flat_reference(np.array(2.0), 1e-5) is None  # a single non-zero value is a real check
    assert flat_reference(np.array([1.0, np.inf]), 1e-5) is None


def test_a_constant_substituted_output_is_named_and_fails_against_a_varying_reference():
    plain = np.array([1.0, -2.0, 3.0], np.float32)
    o = compare_arrays(plain, np.zeros(3, np.float32), tolerance=1e-5)
    assert o.outside == 3 and o.status == FAIL
    assert o.substituted_flat == "is constant (all 0.0)" and o.plain_flat is None
    assert "the substituted output is constant (all 0.0)" in _report(o).format()
    assert o.rel_error == 3.0 / 3.0


def test_fail_outranks_cannot_tell():
    plain = np.zeros(3, np.float32)
    o = compare_arrays(plain, np.array([0.0, 1.0, 0.0], np.float32), tolerance=1e-5)
    assert o.plain_flat == "is constant (all 0.0)" and o.outside == 1
    assert o.status == FAIL and o.rel_error == float("inf")  # any error against an all-zero reference
    assert _report(o).status == FAIL


def test_a_nan_where_the_plain_build_has_a_number_is_outside():
    plain = np.array([1.0, 2.0, 3.0], np.float32)
    sub = np.array([1.0, np.nan, 3.0], np.float32)
    o = compare_arrays(plain, sub, tolerance=1e-5)
    assert o.outside == 1 and o.status == FAIL and o.worst[0].index == (1,)
    both = compare_arrays(sub, sub.copy(), tolerance=1e-5)  # NaN against NaN agrees
    assert both.outside == 0 and both.status == IDENTICAL


def test_a_report_passes_only_when_every_output_passes_and_old_verdicts_still_read():
    good = compare_arrays(np.array([1.0, 2.0]), np.array([1.0, 2.0]), tolerance=1e-5)
    flat = compare_arrays(np.zeros(2), np.zeros(2), tolerance=1e-5)
    assert _report(good).status == IDENTICAL and _report(good).passed
    assert _report(good, flat).status == CANNOT_TELL and not _report(good, flat).passed
    # a verdict stored before the scale-relative error existed
    old = {"passed": False, "bit_identical": False, "tolerance": 1e-5, "max_abs": 0.5, "max_ulp": 9}
    assert verdict_summary(old) == "FAIL: max abs error 0.5"
    assert verdict_short({**old, "passed": True}) == "PASS (max abs 0.5)"


def test_check_numerics_comparison_names_the_worst_element_and_a_flat_reference():
    ours = [np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)]
    ref = [np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)]
    c = _compare("iree-cpu", ours, ref)
    assert (c.max_error, c.scale, c.worst) == (0.5, 4.0, "output0[1, 1]: 4.5, reference 4")
    assert not c.ok and "= 0.125 of the largest value 4 " in c.line() and c.line().endswith("DIFFERS")

    zeros = [np.zeros((3, 2), np.float32)]
    flat = _compare("onnxruntime", zeros, [z.copy() for z in zeros])
    assert flat.ok and flat.cannot_tell and flat.flat == "output0 is constant (all 0.0)"
    assert flat.line().endswith("CANNOT TELL: the reference's output0 is constant (all 0.0)")
    assert final_line(True, [c, flat]).startswith("OK per dispatch; the outputs cannot tell (the onnxruntime")
    assert final_line(True, [None]) == "OK" and final_line(False, [flat]) == "MISMATCH"
    assert flat.to_dict()["flat_reference"] == "output0 is constant (all 0.0)"


def test_element_values_show_the_digits_their_type_needs():
    one_ulp_below_4 = float(np.nextafter(np.float32(4.0), np.float32(0)))  # 4 - 2^-22
    assert element_text(one_ulp_below_4, "float32") == "3.9999998"  # .7g would print 4 and hide the error
    assert element_text(4.0 - 2.0 ** -51, "float64") == "3.9999999999999996"
    assert element_text(1e-6, "float32") == "1e-06" and element_text(0.0, "float16") == "0"
    assert element_text(7.0, "int8") == "7" and element_text(1.5, "bfloat16") == "1.5"
