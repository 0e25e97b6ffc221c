"""The lower half of the Executables dock's report: the verdict, the comparison table, the timing.

They scroll together when the pane is short, so a wrapped line is never cut off and the
verdict's first lines always show. Text and colours come from verdicts.py.
"""

from __future__ import annotations

from PySide6 import QtWidgets

from ...core.run.kernel_timing import KernelTiming
from ...core.run.numeric_gate import SCALE_NOTE, GateReport, verdict_summary
from .verdicts import RESULT_COLUMNS, RESULT_TIPS, TIMING_TIP, result_rows, result_tips, status_color


class ReportView(QtWidgets.QScrollArea):
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.verdict = QtWidgets.QLabel()
        self.verdict.setAccessibleName("Verdict")
        self.verdict.setWordWrap(True)  # a long verdict wraps; it never widens the dock
        self.verdict.setToolTip(SCALE_NOTE)
        self.results = QtWidgets.QTableWidget(0, len(RESULT_COLUMNS))
        self.results.setHorizontalHeaderLabels(RESULT_COLUMNS)
        for col, name in enumerate(RESULT_COLUMNS):
            self.results.horizontalHeaderItem(col).setToolTip(RESULT_TIPS.get(name, ""))
        self.results.setAccessibleName("Comparison")
        self.results.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results.verticalHeader().setVisible(False)
        self.timing = QtWidgets.QLabel()
        self.timing.setWordWrap(True)
        self.timing.setAccessibleName("Timing")
        self.timing.setToolTip(TIMING_TIP)
        report = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(report)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.verdict)
        layout.addWidget(self.results, 1)
        layout.addWidget(self.timing)
        self.setWidgetResizable(True)
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.setWidget(report)
        self.setMinimumHeight(3 * self.verdict.fontMetrics().lineSpacing())

    def show_report(self, report: GateReport, timing: KernelTiming | None = None) -> None:
        self.verdict.setText(f"Verdict: {verdict_summary(report.verdict())} (on {report.inputs})")
        self.verdict.setStyleSheet(f"color:{status_color(report.status).name()};font-weight:bold")
        rows = result_rows(report)
        self.results.setRowCount(len(rows))
        for r, (values, tips) in enumerate(zip(rows, result_tips(report))):
            for c, value in enumerate(values):
                item = QtWidgets.QTableWidgetItem(value)
                if c == RESULT_COLUMNS.index("result"):
                    item.setForeground(status_color(value))
                item.setToolTip(tips.get(c, ""))
                self.results.setItem(r, c, item)
        self.results.resizeColumnsToContents()
        self.timing.setText(timing.format() if timing is not None else "")

    def clear(self) -> None:
        self.verdict.clear()
        self.results.setRowCount(0)
        self.timing.clear()

    def missing_height(self) -> int:
        """How much taller the pane must be to show the whole report at its width."""
        return self.widget().heightForWidth(self.viewport().width()) - self.viewport().height()
