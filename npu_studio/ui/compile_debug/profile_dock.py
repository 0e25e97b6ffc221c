"""The Compile profile dock: where the compiler spent its time, phase by phase, pass by pass.

A thin view over core/debug/compile_profile.py (recording and reading a
build's profile) and core/debug/executable_times.py (each executable compiled
alone). Recording runs as a job of the studio's job manager, with progress
and cancel. The timeline's phase cards show each phase's top pass on hover
(`sig_phase_notes`, which the shell hands to the timeline).
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from ...core.compile.phases import SNAPSHOT_PHASES
from ...core.debug.compile_profile import BuildProfile, ProfileJob, load_profile
from ...core.debug.executable_times import ExecutableTimesJob
from ...core.errors import StudioError
from ...core.problems import UNREADABLE
from ...core.workspace import variants
from ...core.session import Session
from ...core.workspace.workspace import Workspace
from ..shell import Shell
from ..sort_items import VALUE_ROLE, ValueSortTableItem
from ..studio import Studio

COLUMNS = ("pass", "wall s", "user s", "share", "runs")


def _item(value, text: str | None = None) -> QtWidgets.QTableWidgetItem:
    item = ValueSortTableItem(text if text is not None else str(value))
    item.setData(VALUE_ROLE, value)
    return item


def on_disk(ws: Workspace | None) -> Workspace | None:
    """The workspace as its manifest now is: jobs record variants and profiles through their own copy."""
    if ws is None:
        return None
    try:
        return Workspace.open(ws.root)
    except StudioError:
        return ws


def builds_of(ws: Workspace | None) -> list[str]:
    return [variants.MAIN, *(v.name for v in variants.variants(ws))] if ws is not None else []


class ProfileDock(QtCore.QObject):
    sig_recorded = QtCore.Signal(str)  # what was recorded: "profile" or "executables"
    sig_phase_notes = QtCore.Signal(object)  # {phase: "Top pass: ..." or ""} of the main build
    sig_finished = QtCore.Signal()  # a recording ended (executables' compile times may have changed)

    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())
        self.session, self.studio, self.shell = session, studio, shell
        self.profile: BuildProfile | None = None
        self._running = False
        self._build_widgets()
        studio.sig_index_finished.connect(self.refresh)

    def _build_widgets(self) -> None:
        self.build_combo = QtWidgets.QComboBox()
        self.build_combo.setAccessibleName("Build")
        self.build_combo.currentTextChanged.connect(lambda _t: self.refresh())
        self.phase_combo = QtWidgets.QComboBox()
        self.phase_combo.setAccessibleName("Phase")
        self.phase_combo.currentTextChanged.connect(lambda _t: self._fill_table())
        self.record_button = QtWidgets.QPushButton("Record profile")
        self.record_button.clicked.connect(self.record)
        self.executables_button = QtWidgets.QPushButton("Time executables")
        self.executables_button.setToolTip("Compile each executable alone (2 at once, 120 s each at most)")
        self.executables_button.clicked.connect(self.time_executables)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        # what to show, then what to run: two short rows, so a narrow dock keeps the table whole
        choose, run = QtWidgets.QHBoxLayout(), QtWidgets.QHBoxLayout()
        for w in (QtWidgets.QLabel("build"), self.build_combo, QtWidgets.QLabel("phase"), self.phase_combo):
            choose.addWidget(w)
        self.phase_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        for w in (self.record_button, self.executables_button, self.cancel_button):
            run.addWidget(w)
        for row in (choose, run):
            row.addStretch(1)
        self.summary = QtWidgets.QLabel("No profile recorded for this build.")
        self.summary.setWordWrap(True)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Passes")
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.setSortingEnabled(True)
        # The numbers keep their width; the pass column takes the rest, a long name elided in its
        # middle (whole in its tooltip): a narrow dock never scrolls the names' starts out of view.
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        for col in range(1, len(COLUMNS)):
            header.setSectionResizeMode(col, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideMiddle)
        self.table.setWordWrap(False)
        body = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(body)
        layout.addLayout(choose)
        layout.addLayout(run)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.dock = QtWidgets.QDockWidget("Compile profile", self.shell.parent_widget())
        self.dock.setObjectName("compileProfileDock")
        self.dock.setWidget(body)
        self.shell.add_dock(self.dock, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, visible=False)
        self._update_buttons()

    # -- showing -------------------------------------------------------------------

    def refresh(self) -> None:
        ws = on_disk(self.session.workspace)
        current = self.build_combo.currentText() or variants.MAIN
        names = builds_of(ws)
        self.build_combo.blockSignals(True)
        self.build_combo.clear()
        self.build_combo.addItems(names)
        if current in names:
            self.build_combo.setCurrentText(current)
        self.build_combo.blockSignals(False)
        self.profile = None
        if ws is not None and names:
            try:
                self.profile = load_profile(ws, self.build_combo.currentText())
            except StudioError as exc:  # the record stays as it is; Record profile writes a new one
                self.shell.show_error(str(exc), UNREADABLE)
        phase = self.phase_combo.currentText()
        phases = list(self.profile.phases) if self.profile else []
        self.phase_combo.blockSignals(True)
        self.phase_combo.clear()
        self.phase_combo.addItems(phases)
        if phase in phases:
            self.phase_combo.setCurrentText(phase)
        elif phases:  # the phase that took longest
            self.phase_combo.setCurrentText(max(phases, key=lambda p: self.profile.phases[p].total_wall))
        self.phase_combo.blockSignals(False)
        self._fill_table()
        self._update_timeline()
        self._update_buttons()

    def _fill_table(self) -> None:
        pp = self.profile.phases.get(self.phase_combo.currentText()) if self.profile else None
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(pp.passes) if pp else 0)
        if pp is None:
            self.summary.setText("No profile recorded for this build: Record profile compiles each phase "
                                 "again alone with --mlir-timing.")
        else:
            self.summary.setText(f"{pp.phase}: {pp.total_wall:.3f} s in the compiler's own count, "
                                 f"{pp.pass_wall:.3f} s in passes, {pp.outside_wall:.3f} s outside any pass")
            for row, p in enumerate(pp.passes):
                cells = (_item(p.name), _item(p.wall, f"{p.wall:.4f}"), _item(p.user, f"{p.user:.4f}"),
                         _item(pp.share(p), f"{pp.share(p):.1%}"), _item(p.instances))
                cells[0].setToolTip(p.name)
                for col, cell in enumerate(cells):
                    self.table.setItem(row, col, cell)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(1, QtCore.Qt.SortOrder.DescendingOrder)

    def _update_timeline(self) -> None:
        main = self.profile if self.build_combo.currentText() == variants.MAIN else None
        notes = {}
        for phase in SNAPSHOT_PHASES:
            pp = main.phases.get(phase) if main else None
            top = pp.passes[0] if pp and pp.passes else None
            notes[phase] = f"Top pass: {top.name} {top.wall:.3f} s ({pp.share(top):.0%})" if top else ""
        self.sig_phase_notes.emit(notes)

    # -- recording -----------------------------------------------------------------

    def record(self) -> None:
        ws, build = self.session.workspace, self.build_combo.currentText()
        if ws is None or not build or self._running:
            return
        root = ws.root
        phases = list(ws.snapshots())

        def work(report, token):
            job = ProfileJob(Workspace.open(root), build, on_progress=lambda done, running: report(done, running))
            token.attach(job.cancel)
            return job.run()

        self._start("profile", work, f"Profiling {build}", len(phases))

    def time_executables(self) -> None:
        ws, build = self.session.workspace, self.build_combo.currentText()
        if ws is None or not build or self._running:
            return
        root = ws.root

        def work(report, token):
            job = ExecutableTimesJob(Workspace.open(root), build, on_progress=lambda done, total: report(done, total))
            token.attach(job.cancel)
            return job.run()

        self._start("executables", work, f"Compiling the executables of {build} one by one", None)

    def _start(self, what: str, work, message: str, steps: int | None) -> None:
        self._running = True
        self.shell.set_status(message)

        def progress(*args):
            self.shell.set_status(f"{message}: {args[1] or 'done'}" if what == "profile"
                                             else f"{message}: {args[0]} of {args[1]}")

        self.studio.jobs.start("profile", work, on_done=lambda result, _g: self._done(what, result),
                               on_failed=self._failed, on_progress=progress, on_finished=self._finished)
        self._update_buttons()

    def cancel(self) -> None:
        if self._running:
            self.studio.jobs.cancel("profile")

    def is_busy(self) -> bool:
        return self._running

    def _done(self, what: str, result) -> None:
        self.shell.set_status("Profile recorded" if what == "profile" else "Executables timed")
        self.sig_recorded.emit(what)

    def _failed(self, exc: Exception, tb: str, _generation) -> None:
        self.shell.show_error(str(exc) if isinstance(exc, StudioError) else f"internal error: {exc}")
        log = getattr(exc, "log", "") or ("" if isinstance(exc, StudioError) else tb)
        if log:
            self.shell.append_log(log, error=True)

    def _finished(self, _generation) -> None:
        self._running = False
        self.refresh()
        self.sig_finished.emit()

    def _update_buttons(self) -> None:
        ready = self.session.workspace is not None and bool(self.build_combo.currentText())
        self.record_button.setEnabled(ready and not self._running)
        self.executables_button.setEnabled(ready and not self._running)
        self.cancel_button.setEnabled(self._running)
