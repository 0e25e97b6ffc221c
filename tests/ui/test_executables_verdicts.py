"""The Executables dock explains its verdicts: the error against the output's scale, the worst
elements, a flat reference flagged, a timing ratio only when it is measurable (issue 24 item 7)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import shutil

import numpy as np
import pytest
from PySide6 import QtCore

from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.run.kernel_timing import KernelTiming, Timing
from npu_studio.core.run.numeric_gate import GateReport, compare_arrays
from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.ui.executables.verdicts import RESULT_COLUMNS, UNSURE_COLOR


DOCK_AT_1280 = QtCore.QSize(460, 308)


def _fits(label, dock) -> bool:
    """The label shows all its text: tall enough for its wrapped lines, its right edge inside the dock
    (it may sit below the fold of the report's scroll area, never beside it)."""
    right = label.mapTo(dock, QtCore.QPoint(label.width(), 0)).x()
    return label.isVisible() and label.heightForWidth(label.width()) <= label.height() and right <= dock.width()


def _open(window, qtbot, ws):
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(ws.root)
    panel = window.executables
    panel.dock.show()
    # the width and height the dock gets beside the IR view with every dock open on a 1280x800
    # screen (measured under Xvfb); floated here so that the test does not depend on the window's layout
    panel.dock.setFloating(True)
    panel.dock.resize(DOCK_AT_1280)
    qtbot.wait(50)
    return panel


def test_the_comparison_table_shows_the_error_against_the_scale_and_the_worst_elements(window, qtbot, fresh_example):
    panel = _open(window, qtbot, fresh_example)
    plain = np.array([1e-6, 2.0, -4.0, 0.5], np.float32)
    sub = plain.copy()
    sub[0] = np.float32(1.2e-6)  # 20% off near zero
    sub[2] = np.nextafter(np.float32(-4.0), np.float32(-5.0))  # one ULP (2^-21) off at the largest element
    report = GateReport("SingleConv", 1e-5, "hand-made arrays", [compare_arrays(plain, sub, 1e-5)], "compared")
    # 3 runs each: too few to call a difference, whatever the ratio
    timing = KernelTiming("k", Timing([1.0, 1.2, 0.8]), Timing([4.92, 5.9, 3.9]))
    panel.show_report(report, timing)
    qtbot.wait(50)

    col = {name: i for i, name in enumerate(RESULT_COLUMNS)}
    cell = lambda name: panel.results.item(0, col[name])  # noqa: E731
    assert cell("result").text() == "PASS"
    assert float(cell("of scale").text()) == pytest.approx(2.0 ** -23, rel=1e-5)  # 2^-21 / 4, six digits shown
    assert float(cell("scale").text()) == 4.0 and cell("max ULP").text() == "1"
    assert cell("worst element").text() == "[2]: -4 → -4.0000005"
    assert cell("worst element").toolTip().splitlines()[1] == "[0]: plain 1e-06, substituted 1.2e-06"
    header_tip = panel.results.horizontalHeaderItem(col["of scale"]).toolTip()
    assert "largest |plain|" in header_tip and "near-zero" in header_tip
    text = panel.verdict.text()
    assert text.startswith("Verdict: PASS: max abs error 4.77e-07 = 1.19e-07 of the output's scale (largest |plain| 4)")
    assert _fits(panel.verdict, panel.dock)
    assert "ratio" not in panel.timing.text()
    assert panel.timing.text().endswith("no measurable difference (too few repetitions, 3 and 3 of the 10 needed)")
    assert _fits(panel.timing, panel.dock)


def test_a_flat_reference_is_flagged_in_the_list_the_table_and_the_question(window, qtbot, fresh_example):
    ws = fresh_example
    [info] = list_executables(ws)
    zeros = np.zeros((1, 8, 4, 4), np.float32)
    report = GateReport("SingleConv", 1e-5, "zeros.npy", [compare_arrays(zeros, zeros.copy(), 1e-5)], "compared")
    # a substitution that is on, with this verdict kept in the manifest (as the gate keeps it)
    (ws.root / "substitutions").mkdir(exist_ok=True)
    kept = ws.root / "substitutions" / f"{info.name}.source.1.mlir"
    shutil.copyfile(info.source, kept)
    sub_records.update(ws, sub_records.Substitution(info.name, sub_records.SOURCE, file=str(kept.relative_to(ws.root)),
                                                    verdict=report.verdict()))
    panel = _open(window, qtbot, ws)
    assert panel.select(info.name)
    row = next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == info.name)
    cell = panel.table.item(row, 5)
    assert cell.text() == "CANNOT TELL (flat reference)" and cell.foreground().color() == UNSURE_COLOR
    assert "the plain build's output0 is constant (all 0.0)" in cell.toolTip()
    # never kept silently: the dock asks, and says why
    assert panel.decision.isVisible()
    assert "could not be checked (the plain build's output0 is constant (all 0.0))" in panel.decision_label.text()

    panel.show_report(report)
    qtbot.wait(50)
    result = panel.results.item(0, RESULT_COLUMNS.index("result"))
    assert result.text() == "CANNOT TELL" and result.foreground().color() == UNSURE_COLOR
    assert result.toolTip() == "the plain build's output is constant (all 0.0): the check cannot tell"
    assert panel.verdict.text().startswith("Verdict: CANNOT TELL: the plain build's output0 is constant (all 0.0)")
    assert UNSURE_COLOR.name() in panel.verdict.styleSheet()
    assert _fits(panel.verdict, panel.dock)

    # Check numerics names it in its reference, without calling it a failure
    [named] = [s.describe() for s in sub_records.applied(window.workspace)]  # what the check's report lists
    assert named.startswith(f"@{info.name} (source, ") and named.endswith(", CANNOT TELL)")

    # Keep it on: remembered for this verdict, the question goes
    panel.keep_button.click()
    assert not panel.decision.isVisible()
    assert sub_records.find(window.workspace, info.name, sub_records.SOURCE).kept_failing == report.verdict()
