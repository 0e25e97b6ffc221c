"""ScheduleDock: the schedule chart, its summary, and the run's actions.

Toolbar: time unit, critical path, fit, pin this run (a second chart side
by side, and the summary compares against it), check numerics, export
(trace JSON for Perfetto, per-dispatch CSV, PNG of the chart). A banner
says when the shown run is stale (a rerun is in progress or its inputs
changed) or when the last run failed. The dock only shows; the controller
(`controller.py`) decides what to run and when.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from ...core.npu.report.schedule_model import Comparison, ScheduleModel
from ..banner import OneLineBanner
from .metrics import chart_min_height
from .summary import ScheduleSummary

STALE_STYLE = "background:#fff3cd;color:#664d03;padding:3px;"
FAILED_STYLE = "background:#f8d7da;color:#842029;padding:3px;"
OK_STYLE = "background:#d1e7dd;color:#0f5132;padding:3px;"


class ScheduleDock(QtWidgets.QDockWidget):
    sig_task_selected = QtCore.Signal(int)  # task id
    sig_dispatch_selected = QtCore.Signal(int)  # dispatch index
    sig_check_requested = QtCore.Signal()
    sig_measure_requested = QtCore.Signal()
    sig_export_requested = QtCore.Signal(str, str)  # kind (trace|csv|png), path

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("NPU schedule", parent)
        self.setObjectName("schedule_dock")
        body = QtWidgets.QWidget(self)
        self.toolbar = QtWidgets.QToolBar(body)
        self.heading = QtWidgets.QLabel(body)  # what this schedule is, when it is not the open model's
        self.heading.setWordWrap(True)
        self.heading.setStyleSheet("background:#e7f1ff;color:#084298;padding:3px;font-weight:bold;")
        self.heading.hide()
        self.unit_box = QtWidgets.QComboBox(body)
        self.unit_box.addItem("cycles", "cycles")
        self.unit_box.addItem("µs", "us")
        self.unit_box.currentIndexChanged.connect(self._on_unit)
        self.toolbar.addWidget(self.unit_box)
        self.critical_action = self.toolbar.addAction("Critical path")
        self.critical_action.setCheckable(True)
        self.critical_action.toggled.connect(lambda on: self.chart.show_critical_path(on))
        self.toolbar.addAction("Fit", lambda: self.chart.fit())
        self.pin_action = self.toolbar.addAction("Pin run", self.pin_current)
        self.unpin_action = self.toolbar.addAction("Unpin", self.unpin)
        self.unpin_action.setEnabled(False)
        self.check_action = self.toolbar.addAction("Check numerics", self.sig_check_requested.emit)
        self.measure_action = self.toolbar.addAction("Measure CPU", self.sig_measure_requested.emit)
        self.measure_action.setToolTip("Profile the CPU build with IREE's runtime: a row of measured "
                                       "dispatch times under the NPU engines")
        self.toolbar.addSeparator()
        self.run_actions = [self.critical_action, self.pin_action, self.check_action]
        for label, kind, filt in (("Export trace", "trace", "Trace JSON (*.json)"),
                                  ("Export CSV", "csv", "CSV (*.csv)"),
                                  ("Export PNG", "png", "PNG image (*.png)")):
            self.run_actions.append(self.toolbar.addAction(label, lambda k=kind, f=filt: self._ask_export(k, f)))
        # One line each (the tooltip has the whole text): a banner never takes the chart's rows.
        self.banner = OneLineBanner(body)
        self.banner.hide()
        self.check_label = OneLineBanner(body)
        self.check_label.hide()
        self.empty_label = QtWidgets.QLabel(body)  # why the chart is blank
        self.empty_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setMinimumHeight(chart_min_height())  # the dock keeps its size with or without a run
        self._chart = self._pinned_chart = None  # built on first use: pyqtgraph costs the app's start
        self.summary = ScheduleSummary(body)
        self._charts = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, body)
        self._split = split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, body)
        split.addWidget(self._charts)
        split.addWidget(self.summary)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 1)
        split.setMinimumHeight(chart_min_height())  # readable rows before the chart is even built
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.banner)
        layout.addWidget(self.check_label)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(split, 1)
        self.set_empty_reason("No model open: open or drop a model to see its NPU schedule.")
        self.setWidget(body)
        self.export_folder, self.export_stem = "", "schedule"  # the workspace and model: where exports go
        self.model: ScheduleModel | None = None
        self.pinned: ScheduleModel | None = None
        self.previous: ScheduleModel | None = None
        self.comparison: Comparison | None = None
        self.summary.sig_dispatch_selected.connect(self._on_row_selected)

    @property
    def chart(self):
        """The current run's ScheduleChart (created, with pyqtgraph, when first asked for)."""
        if self._chart is None:
            from .chart import ScheduleChart

            self._chart = ScheduleChart(self._charts)
            self._pinned_chart = ScheduleChart(self._charts)
            self._pinned_chart.hide()
            self._charts.addWidget(self._chart)
            self._charts.addWidget(self._pinned_chart)
            self._chart.sig_task_clicked.connect(self._on_task_clicked)
            # the splitter sized its panes while the chart pane was empty
            total = max(self._split.width(), 900)
            self._split.setSizes([total * 2 // 3, total - total * 2 // 3])
        return self._chart

    @property
    def pinned_chart(self):
        self.chart  # noqa: B018 - builds both charts
        return self._pinned_chart

    # -- runs --------------------------------------------------------------
    def show_run(self, model: ScheduleModel | None, previous: ScheduleModel | None = None) -> None:
        """Show a finished run; compare with the pinned run, else with `previous`."""
        self.model = model
        self.previous = previous
        base = self.pinned or previous
        self.comparison = model.compare(base) if model is not None and base is not None else None
        if model is not None or self._chart is not None:
            self.chart.set_model(model, self.unit())
        self.summary.show_model(model, self.comparison)
        self.banner.hide()
        self.check_label.hide()
        if model is not None:
            self.set_empty_reason(None)
        for action in self.run_actions:
            action.setEnabled(model is not None)

    def set_heading(self, text: str | None) -> None:
        """A line above the chart saying whose schedule this is (None: none)."""
        self.heading.setText(text or "")
        self.heading.setVisible(bool(text))

    def set_empty_reason(self, why: str | None) -> None:
        """With no run on show, say why in place of the chart (None: a run is shown)."""
        self.empty_label.setText(why or "")
        self.empty_label.setVisible(why is not None)
        self._split.setVisible(why is None)
        if why is not None:
            for action in self.run_actions:
                action.setEnabled(False)

    def empty_reason(self) -> str | None:
        return self.empty_label.text() if self.empty_label.isVisibleTo(self) else None

    def mark_stale(self, why: str) -> None:
        """Keep the old run on screen, marked as not current."""
        if self.model is not None:
            self.model.stale = True
        self.banner.set_message(f"Stale: {why}. The chart shows the previous run.")
        self.banner.setStyleSheet(STALE_STYLE)
        self.banner.show()

    def mark_current(self) -> None:
        """The run on show is current again (a cancelled compile brought its build back): the stale
        mark goes with its cause; a failed simulation's stays."""
        if not self.banner.isHidden() and self.banner.full_text().startswith("Stale"):
            if self.model is not None:
                self.model.stale = False
            self.banner.hide()

    def mark_failed(self, message: str) -> None:
        if self.model is not None:
            self.model.stale = True
        self.banner.set_message(f"Simulation failed: {message}")
        self.banner.setStyleSheet(FAILED_STYLE)
        self.banner.show()

    def is_stale(self) -> bool:
        return self.banner.isVisible() and self.banner.full_text().startswith(("Stale", "Simulation failed"))

    def show_check(self, lines: list[str], ok: bool) -> None:
        self.check_label.set_message(lines)
        self.check_label.setStyleSheet(OK_STYLE if ok else FAILED_STYLE)
        self.check_label.show()

    def pin_current(self) -> None:
        if self.model is None:
            return
        self.pinned = self.model
        self.pinned_chart.set_model(self.pinned, self.unit())
        self.pinned_chart.show()
        self.unpin_action.setEnabled(True)
        self.summary.show_model(self.model, self.model.compare(self.pinned))

    def unpin(self) -> None:
        self.pinned = None
        self.pinned_chart.set_model(None)
        self.pinned_chart.hide()
        self.unpin_action.setEnabled(False)
        self.show_run(self.model, self.previous)

    def unit(self) -> str:
        return self.unit_box.currentData()

    def _on_unit(self, *_):
        if self._chart is None:
            return
        self.chart.set_unit(self.unit())
        self.pinned_chart.set_unit(self.unit())

    # -- links --------------------------------------------------------------
    def select_task(self, task: int) -> None:
        self.chart.select_task(task)

    def highlight_dispatch(self, dispatch: int) -> None:
        """Highlight every task of `dispatch` and zoom to them; select its row."""
        if self.model is None:
            return
        self.chart.highlight_tasks(self.model.tasks_of_dispatch(dispatch), zoom=True)
        self.summary.select_dispatch(dispatch)

    def _on_task_clicked(self, task: int) -> None:
        self.chart.select_task(task)
        self.sig_task_selected.emit(task)

    def _on_row_selected(self, dispatch: int) -> None:
        self.highlight_dispatch(dispatch)
        self.sig_dispatch_selected.emit(dispatch)

    def set_export_place(self, folder: str, stem: str) -> None:
        """Export dialogs start in `folder` (the workspace) with a name made from `stem` (the model)."""
        self.export_folder, self.export_stem = folder, stem

    def suggested_export_path(self, kind: str) -> str:
        suffix = {"trace": "-schedule.trace.json", "csv": "-schedule.csv", "png": "-schedule.png"}[kind]
        return str(Path(self.export_folder or ".") / f"{self.export_stem}{suffix}")

    def _ask_export(self, kind: str, file_filter: str) -> None:
        if self.model is None:
            return
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, f"Export {kind}", self.suggested_export_path(kind),
                                                        file_filter)
        if path:
            self.export(kind, path)

    def export(self, kind: str, path: str) -> None:
        """Write the export (the controller does, and says where it wrote)."""
        self.sig_export_requested.emit(kind, path)
