"""The Executables dock: every hal.executable, its editor, substitute-and-rebuild, the verdict.

A thin layer over core/executables/catalog.py (the list) and core/run/substitute_workflow.py (check,
rebuild, compare, time; switch on or off; remove). Built from `(session, studio, shell)` (ui/shell.py):
the workspace and its indexes come from the session, the list follows `studio.sig_index_finished`,
"Open executable" is an action on the session's selected dispatch (also on double-click), and the
rebuilds run as "compile" jobs of the shell's job manager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.errors import StudioError
from ...core.problems import SUBSTITUTION, UNREADABLE
from ...core.executables import substitution as subs
from ...core.executables.catalog import ExecutableInfo, list_executables
from ...core.run.numeric_gate import CANNOT_TELL, DEFAULT_TOLERANCE, GateReport, verdict_status, verdict_summary
from ...core.run.substitute_workflow import (SubstitutionOutcome, TimingRequest, remove_substitution,
                                             substitute_and_check, switch_substitution)
from ...core.session import Session
from ...core.workspace import substitutions as sub_records
from ...core.workspace.workspace import Workspace
from .editor import ExecutableEditor
from .listing import ExecutableList, recorded_times, times_by_name
from .report import ReportView

if TYPE_CHECKING:
    from ..shell import Shell
    from ..studio import Studio

# per timing, the kernel alone: the job cannot be cancelled while it times
UI_TIMING = TimingRequest(max_seconds=10.0, whole_model=False)


class ExecutablesPanel(QtCore.QObject):
    sig_finished = QtCore.Signal(bool)  # a substitute / switch / remove ended: True when it built

    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())  # goes with the shell's widgets
        self.session, self.studio, self.shell = session, studio, shell
        self.infos: list[ExecutableInfo] = []
        self.report: GateReport | None = None
        self._running = False
        self._ok = False
        self._loaded: tuple | None = None  # (workspace, name, kind, text) the editor was given
        self._build_widgets()
        studio.sig_index_finished.connect(self.refresh)
        session.events.workspace.connect(self._on_workspace)
        self.open_action = QtGui.QAction("Open executable", self)
        self.open_action.triggered.connect(lambda: self.open_for_dispatch(session.selection.dispatch))
        shell.add_dispatch_action(self.open_action, on_double_click=True)
        # An edit not yet substituted is kept as a draft when its window closes (the shell calls
        # `stash_edit`; the job manager stops a running rebuild); another workspace keeps it too.

    # -- widgets ---------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.table = ExecutableList()
        self.table.itemSelectionChanged.connect(self._load_selected)

        self.editor = ExecutableEditor()
        self.editor.sig_kind_changed.connect(lambda _k: self._load_selected())
        self.substitute_button = QtWidgets.QPushButton("Substitute and rebuild")
        self.substitute_button.clicked.connect(self.substitute)
        self.toggle_button = QtWidgets.QPushButton("Switch off")
        self.toggle_button.clicked.connect(self.toggle)
        self.remove_button = QtWidgets.QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.slowest_button = QtWidgets.QPushButton("Slowest to compile")
        self.slowest_button.setToolTip("Open the executable that took longest to compile alone (Compile profile)")
        self.slowest_button.setEnabled(False)
        self.slowest_button.clicked.connect(self.open_slowest)
        self.compile_times: dict = {}
        self.tolerance = QtWidgets.QDoubleSpinBox(decimals=9, minimum=0.0, maximum=10.0, singleStep=1e-6)
        self.tolerance.setToolTip("An element fails when |substituted - plain| > tolerance * max(1, largest "
                                  "|plain|); 'arithmetic': from the element types the program computes in")
        self.tolerance.setSpecialValueText("arithmetic")  # shown at the minimum, 0: the shared rule
        self.tolerance.setValue(DEFAULT_TOLERANCE or 0.0)
        self.tolerance.setAccessibleName("Tolerance")
        self.tolerance.setMaximumWidth(130)
        self.time_check = QtWidgets.QCheckBox("Time kernel")
        self.time_check.setChecked(True)
        # Two short rows, so that the dock fits beside the IR view on a 1280 px screen.
        buttons = QtWidgets.QVBoxLayout()
        for row in ((self.substitute_button, QtWidgets.QLabel("tolerance"), self.tolerance, self.cancel_button),
                    (self.time_check, self.toggle_button, self.remove_button, self.slowest_button)):
            line = QtWidgets.QHBoxLayout()
            for w in row:
                line.addWidget(w)
            line.addStretch(1)
            buttons.addLayout(line)

        # A substitution whose check failed is never kept silently: the user decides.
        self.decision = QtWidgets.QWidget()
        self.decision.setStyleSheet("background:#fde7e9")
        self.decision_label = QtWidgets.QLabel()
        self.decision_label.setWordWrap(True)
        self.keep_button = QtWidgets.QPushButton("Keep it on")
        self.keep_button.clicked.connect(self.keep_failing)
        self.switch_off_button = QtWidgets.QPushButton("Switch it off")
        self.switch_off_button.clicked.connect(self.switch_off_failing)
        decision = QtWidgets.QHBoxLayout(self.decision)
        decision.setContentsMargins(4, 2, 4, 2)
        decision.addWidget(self.decision_label, 1)
        decision.addWidget(self.keep_button)
        decision.addWidget(self.switch_off_button)
        self.decision.hide()
        self.report_area = ReportView()
        # the report's parts by name, as the tests and the rest of the dock read them
        self.verdict, self.results, self.timing = (self.report_area.verdict, self.report_area.results,
                                                   self.report_area.timing)
        lower = QtWidgets.QWidget()
        lower_layout = QtWidgets.QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.decision)
        lower_layout.addLayout(buttons)
        lower_layout.addWidget(self.report_area, 1)

        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.editor)
        self.splitter.addWidget(lower)
        self.splitter.setSizes([120, 400, 160])
        self.dock = QtWidgets.QDockWidget("Executables", self.shell.parent_widget())
        self.dock.setObjectName("executablesDock")
        self.dock.setWidget(self.splitter)
        # hidden until an executable is opened (View menu, or a dispatch's "Open executable")
        self.shell.add_dock(self.dock, QtCore.Qt.DockWidgetArea.RightDockWidgetArea, visible=False)
        self._update_buttons()

    # -- list ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the list for the session's workspace; the editor keeps what is typed in it."""
        ws = self.session.workspace
        current = self.current_name()
        if self._loaded is not None and (ws is None or ws.root != self._loaded[0].root):
            self.stash_edit()  # another workspace: its edit stays with its own
            self._loaded, current = None, None
            self.editor.set_text("", "")
        try:
            # the session's linked flow index, when it has one: no second parse on the GUI thread
            self.infos = list_executables(ws, self.session.indexes.get("flow")) if ws is not None else []
        except StudioError:  # an older workspace without dumps: nothing to list until it compiles
            self.infos = []
        records = sub_records.load(ws) if ws is not None else []
        self.compile_times = times_by_name(ws, lambda message: self.shell.show_error(message, UNREADABLE))
        self.table.fill(self.infos, records, self.compile_times, current)
        self._ask_about_failures(records)
        shown = next((s for s in records if s.name == self.current_name() and s.kind == self.editor.kind()), None)
        if shown is None or shown.verdict is None:  # removed, switched off or never checked: no old verdict
            self.report_area.clear()
        self.slowest_button.setEnabled(bool(self.compile_times))
        self._update_buttons()

    def _on_workspace(self) -> None:
        """Another model (or none): the edit stays with its own workspace and the list clears at
        once; it fills again when the new workspace's indexes are in (`refresh`)."""
        ws = self.session.workspace
        if self._loaded is None or (ws is not None and ws.root == self._loaded[0].root):
            return
        self.stash_edit()
        self._loaded, self.infos = None, []
        self.editor.set_text("", "")
        self.table.setRowCount(0)
        self.report_area.clear()
        self.decision.hide()
        self._update_buttons()

    def undecided(self) -> sub_records.Substitution | None:
        ws = self.session.workspace
        return next((s for s in sub_records.load(ws) if s.undecided), None) if ws is not None else None

    def _ask_about_failures(self, records: list[sub_records.Substitution]) -> None:
        """Show the choice for a failing substitution that is on, and say it in the error banner."""
        sub = next((s for s in records if s.undecided), None)
        problems = self.session.problems
        if sub is None:
            self.decision.hide()
            problems.clear(SUBSTITUTION)
            return
        v = sub.verdict
        if verdict_status(v) == CANNOT_TELL:
            what = f"could not be checked ({v.get('cannot_tell')})"
        else:
            what = f"FAILED its check ({verdict_summary(v).partition(': ')[2]})"
        message = f"@{sub.name}: the substituted {sub.kind} {what} and is on in the build. Keep it on, or switch it off?"
        self.decision_label.setText(message)
        self.decision.show()
        problems.raise_(SUBSTITUTION, message + " (Executables dock)")

    def keep_failing(self) -> None:
        sub, ws = self.undecided(), self.session.workspace
        if sub is None or self.is_busy():
            return
        try:
            sub_records.keep_failing(ws, sub.name, sub.kind)
        except (OSError, StudioError) as exc:
            self.shell.show_error(f"{ws.root}: cannot record the choice: {exc}")
            return
        self.shell.append_log(f"Kept @{sub.name} on despite its failed check")
        self.refresh()

    def switch_off_failing(self) -> None:
        sub = self.undecided()
        if sub is None or self.is_busy():
            return
        name, kind = sub.name, sub.kind
        self._start_rebuild(lambda own, started: switch_substitution(own, name, kind, False, started=started),
                            f"Switching off @{name}")

    def open_slowest(self) -> bool:
        """Select the executable that took longest to compile alone (Compile profile > Time executables)."""
        from ...core.debug.executable_times import slowest

        times = recorded_times(self.session.workspace)
        top = slowest(times) if times is not None else None
        if top is None or not self.select(top.name):
            return False
        self.dock.show()
        self.dock.raise_()
        return True

    def current_name(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.infos[rows[0].row()].name if rows and rows[0].row() < len(self.infos) else None

    def select(self, name: str) -> bool:
        for row, info in enumerate(self.infos):
            if info.name == name:
                self.table.selectRow(row)
                return True
        return False

    def open_for_dispatch(self, dispatch: int | None) -> bool:
        """Show the executable that runs `dispatch`, its source in the editor."""
        if dispatch is None:
            return False
        if not self.infos:
            self.refresh()
        info = next((i for i in self.infos if dispatch in i.dispatches), None)
        if info is None:
            self.shell.show_error(f"dispatch #{dispatch}: no dumped executable runs it")
            return False
        self.dock.show()
        self.dock.raise_()
        self.editor.set_kind(sub_records.SOURCE)
        if not self.select(info.name) or self.editor.title.text() != info.name:
            self._load_selected()
        return True

    def stash_edit(self) -> None:
        """Keep the editor's text as a draft when it differs from what was loaded: never lose an edit."""
        if self._loaded is None:
            return
        ws, name, kind, text = self._loaded
        if self.editor.text() == text:
            return
        try:
            subs.keep_draft(ws, name, kind, self.editor.text())
        except OSError as exc:
            self.shell.show_error(f"{ws.root}: cannot keep the edit of @{name}: {exc.strerror or exc}")

    def _load_selected(self) -> None:
        name, ws = self.current_name(), self.session.workspace
        self._update_buttons()
        if name is None or ws is None:
            return
        self.stash_edit()
        try:
            text = subs.current_text(ws, name, self.editor.kind())
        except (OSError, StudioError) as exc:
            self.editor.show_error(str(exc))
            return
        self.editor.set_text(name, text)
        self._loaded = (ws, name, self.editor.kind(), text)
        sub = sub_records.find(ws, name, self.editor.kind())
        if sub is not None and sub.error:
            line, col, _reason = _split_error(sub.error)
            self.editor.show_error(f"did not build: {sub.error}", line, col)

    # -- actions: each runs as a "compile" job of the shell's job manager, on its own workspace --

    def substitute(self) -> None:
        ws, name = self.session.workspace, self.current_name()
        if ws is None or name is None or self.is_busy() or self.studio.is_busy():
            return
        kind, text, root = self.editor.kind(), self.editor.text(), ws.root
        self.editor.clear_error()
        try:  # parsed and checked here, at once: a typo never starts a build
            subs.check(ws, name, kind, text)
        except StudioError as exc:
            self.editor.show_error(str(exc), getattr(exc, "line", None), getattr(exc, "col", None))
            self.refresh()
            return
        tolerance = self.tolerance.value() or DEFAULT_TOLERANCE  # 0 reads "arithmetic"
        timing = UI_TIMING if self.time_check.isChecked() else None
        self._loaded = (ws, name, kind, text)  # what builds now is no longer an unsaved edit

        def work(report, token):
            return substitute_and_check(Workspace.open(root), name, kind, text, tolerance=tolerance, timing=timing,
                                        on_step=report, started=lambda job: token.attach(job.cancel))

        self._start(work, f"Substituting @{name}")

    def toggle(self) -> None:
        ws, name = self.session.workspace, self.current_name()
        sub = sub_records.find(ws, name, self.editor.kind()) if ws and name else None
        if sub is None or sub.file is None or self.is_busy():
            return
        kind, enabled = sub.kind, not sub.enabled
        self._start_rebuild(lambda own, started: switch_substitution(own, name, kind, enabled, started=started),
                            f"{'Switching on' if enabled else 'Switching off'} @{name}")

    def remove(self) -> None:
        ws, name = self.session.workspace, self.current_name()
        if ws is None or name is None or self.is_busy() or not any(s.name == name for s in sub_records.load(ws)):
            return
        kind = self.editor.kind()
        self._start_rebuild(lambda own, started: remove_substitution(own, name, kind, started=started),
                            f"Removing @{name}")

    def _start_rebuild(self, rebuild, message: str) -> None:
        """`rebuild(workspace, started)`: a switch or a remove, run on the job's own workspace."""
        root = self.session.workspace.root

        def work(_report, token):
            rebuild(Workspace.open(root), lambda job: token.attach(job.cancel))

        self._start(work, message)

    def _start(self, work, message: str) -> None:
        if self.studio.is_busy():
            self.shell.show_error("busy with a compile; wait for it or cancel it first")
            return
        self._running, self._ok = True, False
        self.shell.set_status(message)
        self.shell.jobs.start("compile", work, on_done=self._on_done, on_failed=self._on_failed,
                              on_progress=lambda step: self.shell.set_status(f"{message}: {step}"),
                              on_finished=self._on_finished)
        self._update_buttons()

    def is_busy(self) -> bool:
        return self._running

    def cancel(self) -> None:
        """Stop the rebuild (the previous build stays); a comparison or timing under way finishes."""
        if self._running:
            self.shell.jobs.cancel("compile")

    def _on_done(self, outcome: SubstitutionOutcome | None, _generation) -> None:
        if outcome is not None:
            self.show_report(outcome.gate, outcome.timing)
        self.shell.set_status("Substituted" if outcome is not None else "Rebuilt")
        self._ok = True

    def _on_failed(self, exc: Exception, tb: str, _generation) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"internal error: {exc}"
        self.editor.show_error(message, getattr(exc, "line", None), getattr(exc, "col", None))
        log = getattr(exc, "log", "") or ("" if isinstance(exc, StudioError) else tb)
        if log:
            self.shell.append_log(log, error=True)
        self.shell.set_status("Substitution failed")

    def _on_finished(self, _generation) -> None:
        self._running = False
        ws = self.session.workspace
        if ws is not None:
            # The job wrote the workspace: the studio takes it up again (snapshots after the
            # rebuild phase, the build, the substitutions and their verdicts).
            self.studio.open_workspace(ws.root)
        self.refresh()
        self._update_buttons()
        self.sig_finished.emit(self._ok)

    def show_report(self, report: GateReport, timing=None) -> None:
        self.report = report
        self.report_area.show_report(report, timing)
        self._make_room_for_the_report()

    def _make_room_for_the_report(self) -> None:
        """Grow the lower pane, at the editor's expense and up to half the dock, until the report shows."""
        table, editor, lower = self.splitter.sizes()
        missing = self.report_area.missing_height()
        grow = max(0, min(missing, (table + editor + lower) // 2 - lower, editor - self.editor.minimumSizeHint().height()))
        if grow:
            self.splitter.setSizes([table, editor - grow, lower + grow])

    def _update_buttons(self) -> None:
        ws, name = self.session.workspace, self.current_name()
        busy = self.is_busy()
        self.substitute_button.setEnabled(bool(ws and name) and not busy)
        sub = sub_records.find(ws, name, self.editor.kind()) if ws and name else None
        self.toggle_button.setEnabled(sub is not None and sub.file is not None and not busy)
        self.toggle_button.setText("Switch off" if sub is None or sub.enabled else "Switch on")
        self.remove_button.setEnabled(sub is not None and not busy)
        self.cancel_button.setEnabled(busy)


def _split_error(error: str) -> tuple[int | None, int | None, str]:
    """'21:30: expected ...' -> (21, 30, 'expected ...')."""
    head, _, rest = error.partition(": ")
    line, _, col = head.partition(":")
    if line.isdigit() and col.isdigit():
        return int(line), int(col), rest
    return None, None, error
