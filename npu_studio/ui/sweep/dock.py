"""SweepDock and SweepController: open a sweep's results; a clicked point opens its schedule.

The dock shows a results folder (`npu-studio sweep SPEC --out DIR`) in a
ParetoView. Clicking a point runs the NPU pipeline for that point's model
and target as a background job, then hands the program to the schedule
controller, which simulates it and shows it in the schedule dock.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from ...core.errors import StudioError
from ...core.sweep.run import OpenedSweep, open_sweep
from ..jobs import JobManager
from .pareto import ParetoView

POINT_JOB = "sweep-point"
FAILED_STYLE = "background:#f8d7da;color:#842029;padding:3px;"


class SweepDock(QtWidgets.QDockWidget):
    sig_open_requested = QtCore.Signal(str)  # a results folder

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("Design sweep", parent)
        self.setObjectName("sweep_dock")
        body = QtWidgets.QWidget(self)
        self.open_button = QtWidgets.QPushButton("Open results…", body)
        self.open_button.clicked.connect(self._ask_open)
        self.title = QtWidgets.QLabel("No sweep open: run `npu-studio sweep SPEC --out DIR`, "
                                      "then open DIR.", body)
        self.banner = QtWidgets.QLabel(body)
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(FAILED_STYLE)
        self.banner.hide()
        self.view = ParetoView(body)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.title, 1)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.banner)
        layout.addWidget(self.view, 1)
        self.setWidget(body)

    def _ask_open(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Open sweep results")
        if path:
            self.sig_open_requested.emit(path)

    def show_error(self, message: str) -> None:
        self.banner.setText(message)
        self.banner.show()


class SweepController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log

    def __init__(self, jobs: JobManager, dock: SweepDock, schedule_controller,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.jobs, self.dock, self.schedule = jobs, dock, schedule_controller
        self.sweep: OpenedSweep | None = None
        dock.sig_open_requested.connect(self.open)
        dock.view.sig_point_clicked.connect(self.open_point)

    def open(self, path: str) -> None:
        try:
            sweep = open_sweep(path)
        except StudioError as e:  # the previous sweep stays on screen
            self.dock.show_error(str(e))
            return
        self.sweep = sweep
        self.dock.banner.hide()
        self.dock.title.setText(f"{sweep.spec.name}: {len(sweep.rows)} rows ({path})")
        self.dock.view.set_rows(sweep.rows, sweep.params(), sweep.spec.base_values())
        self.dock.show()
        self.dock.raise_()

    def open_point(self, row: dict) -> None:
        sweep = self.sweep
        if sweep is None:
            return
        self.sig_message.emit(f"Planning sweep point {row['point']} of {row['model']}…")
        self.jobs.start(POINT_JOB, lambda report, token: sweep.program_of(row),
                        on_done=self._on_program, on_failed=self._on_failed)

    def _on_program(self, program, generation: int) -> None:
        self.schedule.simulate(program)
        self.schedule.dock.show()
        self.schedule.dock.raise_()

    def _on_failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_error(f"Cannot open the point's schedule: {message}")
        self.sig_message.emit(f"Sweep point failed: {message}")
