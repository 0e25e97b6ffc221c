"""SweepDock and SweepController: run or open a sweep; a clicked point opens its schedule.

"Run sweep…" runs a spec on every core, or on the Dask cluster whose
scheduler the address field names, as a background job (progress,
time left, Cancel; rerunning resumes), into the folder `npu-studio sweep`
would use; "Open results…" takes a folder `npu-studio sweep SPEC --out DIR`
wrote. Either is shown in a ParetoView. Clicking a point plans and simulates that point's model
and target as a background job and shows it in a schedule dock of its own, titled with the point
(the open model's schedule stays as it is).
"""

from __future__ import annotations

import threading
from pathlib import Path

from typing import TYPE_CHECKING

from PySide6 import QtCore, QtWidgets

from ...core.errors import Cancelled, StudioError
from ..dialog_folders import DialogFolders
from ..jobs import JobManager
from ..schedule.dock import ScheduleDock

if TYPE_CHECKING:
    from ...core.sweep.run import OpenedSweep

POINT_JOB = "sweep-point"
RUN_JOB = "sweep-run"
DASK_TIMEOUT = 10.0  # seconds to reach the scheduler
FAILED_STYLE = "background:#f8d7da;color:#842029;padding:3px;"


class SweepDock(QtWidgets.QDockWidget):
    sig_open_requested = QtCore.Signal(str)  # a results folder
    sig_point_clicked = QtCore.Signal(object)  # the row (dict) of a point clicked in the view
    sig_run_requested = QtCore.Signal(str)  # a sweep spec
    sig_cancel_requested = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None, folders: DialogFolders | None = None):
        super().__init__("Design sweep", parent)
        self.setObjectName("sweep_dock")
        self.folders = folders or DialogFolders()  # where its file dialogs start
        body = QtWidgets.QWidget(self)
        self.open_button = QtWidgets.QPushButton("Open results…", body)
        self.open_button.clicked.connect(self._ask_open)
        self.run_button = QtWidgets.QPushButton("Run sweep…", body)
        self.run_button.clicked.connect(self._ask_run)
        self.progress = QtWidgets.QProgressBar(body)
        self.progress.hide()
        self.cancel_button = QtWidgets.QPushButton("Cancel", body)
        self.cancel_button.clicked.connect(self.sig_cancel_requested.emit)
        self.cancel_button.hide()
        self.dask_edit = QtWidgets.QLineEdit(body)
        self.dask_edit.setPlaceholderText("empty: this machine's cores")
        self.dask_edit.setToolTip("Run sweeps on a Dask cluster: its scheduler's address, "
                                  "e.g. tcp://head:8786 (docs/sweep.md)")
        self.dask_edit.setMinimumWidth(160)
        self.dask_edit.textChanged.connect(self._check_dask)
        self.title = QtWidgets.QLabel("No sweep open: run `npu-studio sweep SPEC --out DIR`, "
                                      "then open DIR.", body)
        self.title.setMinimumWidth(0)
        self.title.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,
                                 QtWidgets.QSizePolicy.Policy.Preferred)
        self.banner = QtWidgets.QLabel(body)
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(FAILED_STYLE)
        self.banner.hide()
        self._view = None  # the ParetoView, built on first use: pyqtgraph costs the app's start
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.run_button)
        top.addWidget(self.open_button)
        top.addWidget(QtWidgets.QLabel("Dask scheduler:", body))
        top.addWidget(self.dask_edit)
        top.addWidget(self.title, 1)
        top.addWidget(self.progress)
        top.addWidget(self.cancel_button)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.banner)
        self._body_layout = layout
        self.setWidget(body)

    @property
    def view(self):
        if self._view is None:
            from .pareto import ParetoView

            self._view = ParetoView(self.widget())
            self._view.sig_point_clicked.connect(self.sig_point_clicked)
            self._body_layout.addWidget(self._view, 1)
        return self._view

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        QtCore.QTimer.singleShot(0, lambda: self.view)  # shown: the (empty) plot, after this paint

    def _ask_open(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Open sweep results", self.folders.start())
        if path:
            self.folders.remember(path)
            self.sig_open_requested.emit(path)

    def _ask_run(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Run sweep", self.folders.start(),
                                                        "Sweep spec (*.toml)")
        if path:
            self.folders.remember(path)
            self.sig_run_requested.emit(path)

    def dask_address(self) -> str | None:
        """The address typed (None: run on this machine); SweepError when it is not one."""
        from ...core.sweep.executors import check_dask_address  # here: it loads the NPU pipeline

        text = self.dask_edit.text().strip()
        return check_dask_address(text) if text else None

    def _check_dask(self) -> None:
        try:
            self.dask_address()
        except StudioError as e:
            self.dask_edit.setStyleSheet("border:1px solid #b02a37;")
            self.dask_edit.setToolTip(str(e))
        else:
            self.dask_edit.setStyleSheet("")
            self.dask_edit.setToolTip("Run sweeps on a Dask cluster: its scheduler's address, "
                                      "e.g. tcp://head:8786 (docs/sweep.md)")

    def show_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.run_button.setEnabled(not running)
        if running:
            self.progress.setRange(0, 0)  # busy until the first batch reports

    def show_progress(self, done: int, total: int, eta: float | None) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        left = f", {eta:.0f} s left" if eta is not None else ""
        self.progress.setFormat(f"%v/%m points{left}")

    def show_error(self, message: str) -> None:
        self.banner.setText(message)
        self.banner.show()


class SweepController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # a line for the log

    def __init__(self, jobs: JobManager, dock: SweepDock, point_dock: ScheduleDock,
                 parent: QtCore.QObject | None = None):
        super().__init__(parent)
        # A point's schedule has its own dock, titled with the point: it never takes the place of the open
        # model's schedule, and is compared only with another point of the same model.
        self.jobs, self.dock, self.point_dock = jobs, dock, point_dock
        point_dock.setWindowTitle("Sweep point schedule")
        point_dock.check_action.setVisible(False)  # they act on the open model's build
        point_dock.measure_action.setVisible(False)
        point_dock.set_empty_reason("Click a point of a sweep to see its schedule here.")
        self._shown_point: dict | None = None
        self.sweep: OpenedSweep | None = None
        dock.sig_open_requested.connect(self.open)
        dock.sig_run_requested.connect(self.run_spec)
        dock.sig_cancel_requested.connect(lambda: self.jobs.cancel(RUN_JOB))
        dock.sig_point_clicked.connect(self.open_point)

    def open(self, path: str) -> None:
        from ...core.sweep.run import open_sweep  # here: sweeps load the NPU pipeline (IREE's bindings)

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

    def run_spec(self, spec_path: str, jobs: int | None = None) -> None:
        """Run the spec into its folder under the studio's home (never beside the spec: that may be
        the install's resources), resuming what an earlier run there finished:
        on the Dask scheduler the dock names, else on `jobs` local workers (default every
        core). A bad or unreachable address is a banner."""
        from ...core.sweep.out_folder import latest_default, new_default

        cancel = threading.Event()
        try:
            out = latest_default(Path(spec_path)) or new_default(Path(spec_path))
        except StudioError as e:
            self.dock.show_error(str(e))
            return
        try:
            dask = self.dock.dask_address()
        except StudioError as e:
            self.dock.show_error(str(e))
            return

        def work(report, token):
            from ...core.sweep.executors import make_executor
            from ...core.sweep.run import run_sweep
            from ...core.sweep.spec import load_spec

            token.attach(cancel.set)
            spec = load_spec(spec_path)
            executor = make_executor(None if dask else jobs, dask, timeout=DASK_TIMEOUT)
            run_sweep(spec, out, executor, resume=True, on_progress=report, cancel=cancel)
            return str(out)

        self.dock.banner.hide()
        self.dock.show_running(True)
        self.sig_message.emit(f"Running sweep {spec_path} into {out}"
                              + (f" on the Dask cluster at {dask}…" if dask else "…"))
        self.jobs.start(RUN_JOB, work, on_done=self._on_run_done, on_failed=self._on_run_failed,
                        on_progress=self.dock.show_progress,
                        on_finished=lambda generation: self.dock.show_running(False))

    def _on_run_done(self, out: str, generation: int) -> None:
        self.sig_message.emit(f"Sweep finished: {out}")
        self.open(out)

    def _on_run_failed(self, exc: Exception, tb: str, generation: int) -> None:
        if isinstance(exc, Cancelled):
            message = "sweep cancelled: run it again to compute only the missing points"
        else:
            message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_error(message)
        self.sig_message.emit(f"Sweep: {message}")

    def open_point(self, row: dict) -> None:
        sweep = self.sweep
        if sweep is None:
            return
        self.sig_message.emit(f"Planning sweep point {row['point']} of {row['model']}…")

        def work(report, token):
            from ...core.npu.report.schedule_model import simulate_run

            return row, simulate_run(sweep.program_of(row))

        self.jobs.start(POINT_JOB, work, on_done=self._on_point_run, on_failed=self._on_failed)

    def _on_point_run(self, done, generation: int) -> None:
        row, run = done
        shown = self._shown_point
        same_model = shown is not None and shown["row"]["model"] == row["model"]
        dock = self.point_dock
        dock.show_run(run.model, shown["model"] if same_model else None)
        params = ", ".join(f"{p} = {row[p]}" for p in self.sweep.params()) if self.sweep else ""
        against = f"; change against point {shown['row']['point']}" if same_model else ""
        dock.set_heading(f"Sweep point {row['point']} of {row['model']}: {params}{against}. "
                         "Not the open model's schedule.")
        dock.setWindowTitle(f"Sweep point {row['point']} ({row['model']})")
        self._shown_point = {"row": row, "model": run.model}
        dock.show()
        dock.raise_()

    def _on_failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_error(f"Cannot open the point's schedule: {message}")
        self.sig_message.emit(f"Sweep point failed: {message}")
