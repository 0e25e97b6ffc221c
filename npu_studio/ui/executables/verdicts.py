"""How the Executables dock shows a verdict: the list's verdict cell, the comparison table, tooltips.

Text only, from core/run/numeric_gate.py (the comparison and the stored verdict) and
core/run/kernel_timing.py (the timing rule); the dock (view.py) puts it in widgets.
"""

from __future__ import annotations

from PySide6 import QtGui

from ...core.run.kernel_timing import MAX_REPETITIONS, MAX_SECONDS, MIN_REPETITIONS, TARGET_SPREAD
from ...core.run.numeric_gate import (CANNOT_TELL, FAIL, ULP_FLOOR, GateReport, verdict_short, verdict_status,
                                      verdict_summary)
from ...core.run.tolerance import element_text
from ...core.workspace import substitutions as sub_records

RESULT_COLUMNS = ("output", "result", "max abs", "of scale", "scale", "max ULP", "outside tol.", "worst element",
                  "plain vs ORT", "subst. vs ORT")
RESULT_TIPS = {
    "max abs": "largest |substituted - plain| over the output's elements",
    "of scale": "max abs as a fraction of the output's scale (its largest |plain|), not of a near-zero element",
    "scale": "the output's largest finite |plain|",
    "max ULP": f"largest distance in units in the last place, over the elements of at least "
               f"{ULP_FLOOR:.0%} of the scale (near zero a tiny error is a huge number of ULPs)",
    "outside tol.": "elements with |substituted - plain| > tolerance * max(1, |plain|)",
    "worst element": "the element with the largest error: plain → substituted (hover for the worst few)",
    "plain vs ORT": "max |plain - onnxruntime|",
    "subst. vs ORT": "max |substituted - onnxruntime|",
}
PASS_COLOR, FAIL_COLOR, UNSURE_COLOR = QtGui.QColor("#1b7f2a"), QtGui.QColor("#b00020"), QtGui.QColor("#a05a00")
TIMING_TIP = (f"Each timing repeats until its interquartile range is under {TARGET_SPREAD:.0%} of its median "
              f"(at least {MIN_REPETITIONS} repetitions, at most {MAX_REPETITIONS} or {MAX_SECONDS:g} s). "
              f"A ratio is given only when both timings settled and the middle halves of their runs do not "
              f"overlap; "
              f"otherwise: no measurable difference.")


def status_color(status: str) -> QtGui.QColor:
    return FAIL_COLOR if status == FAIL else UNSURE_COLOR if status == CANNOT_TELL else PASS_COLOR


def verdict_text(items: list[sub_records.Substitution]) -> tuple[str, str | None, str]:
    """(cell text, status, tooltip) of the verdict of the substitution that is on, if it was checked."""
    for s in items:
        if s.applied and s.verdict:
            return verdict_short(s.verdict), verdict_status(s.verdict), verdict_summary(s.verdict)
    return "", None, ""


def result_rows(report: GateReport) -> list[tuple[str, ...]]:
    def num(x):
        return "" if x is None else f"{x:.6g}"

    rows = []
    for o in report.outputs:
        w = o.worst[0] if o.worst else None
        worst = f"{list(w.index)}: {element_text(w.plain, o.dtype)} → {element_text(w.substituted, o.dtype)}" if w else ""
        rows.append((f"output{o.output} {'x'.join(map(str, o.shape))}", o.status,
                     num(o.max_abs), num(o.rel_error), num(o.scale), str(o.max_ulp), f"{o.outside} of {o.total}",
                     worst, num(o.plain_vs_onnxruntime), num(o.substituted_vs_onnxruntime)))
    return rows


def result_tips(report: GateReport) -> list[dict[int, str]]:
    """Per output row, tooltips by column: why it cannot tell, the worst few elements."""
    tips = []
    for o in report.outputs:
        worst = "\n".join(f"{list(w.index)}: plain {element_text(w.plain, o.dtype)}, "
                          f"substituted {element_text(w.substituted, o.dtype)}" for w in o.worst)
        tips.append({RESULT_COLUMNS.index("result"): "\n".join(o.notes()) or o.error_text(),
                     RESULT_COLUMNS.index("worst element"): worst})
    return tips
