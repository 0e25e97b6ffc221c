"""Edit-and-resume in the IR pane: autosaved drafts, errors marked in place, revert, diffs and the pass view.

Built from `(session, studio, shell)` and the IR pane it edits (ir_pane.py, the same area). The
controller listens to the studio (compile failed with diagnostics, compile finished) and to the IR
view, and sends intents back through the session and the studio; the policies are in
core/workspace/edit_state.py and core/session.py.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.compile.phases import SNAPSHOT_PHASES
from ...core.errors import Cancelled, StudioError
from ...core.problems import COMPILE
from ...core.ir.diagnostics import first_error_in
from ...core.workspace import edit_state
from ..shell import Shell
from ..studio import Studio
from .diff_dialog import AGAINST_ORIGINAL, AGAINST_PREVIOUS_PHASE, DiffDialog
from .ir_pane import IrPane
from .pass_view import PassView
from .support import DraftAutosaver, ErrorMarks, ReplaceBar, edit_menu_actions


class EditController(QtCore.QObject):
    sig_passes_ready = QtCore.Signal(str)  # phase whose pass view is filled

    def __init__(self, session, studio: Studio, shell: Shell, pane: IrPane):
        super().__init__(shell.parent_widget())
        self.session, self.studio, self.shell, self.pane = session, studio, shell, pane
        view = pane.view
        self.marks = ErrorMarks(view)
        layout = pane.widget.layout()
        layout.insertWidget(layout.indexOf(view) + 1, self.marks.label)  # under the text, never over it
        self.autosaver = DraftAutosaver(view, self._autosave)
        self.replace_bar = ReplaceBar(view, pane.find_bar.field.text, pane.find_bar.find_next)
        pane.widget.layout().addWidget(self.replace_bar)
        self.replace_bar.hide()
        view.sig_editable_changed.connect(lambda on: None if on else self.replace_bar.hide())
        # Built now (hidden), so that View lists it and a saved layout can place it.
        self.pass_view = PassView()
        self.pass_view.sig_status.connect(shell.set_status)
        self.pass_dock = QtWidgets.QDockWidget("Passes", shell.parent_widget())
        self.pass_dock.setObjectName("passDock")
        self.pass_dock.setWidget(self.pass_view)
        shell.add_dock(self.pass_dock, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, visible=False)
        self.diff_dialog: DiffDialog | None = None
        self._build_menu()
        self.studio.sig_diagnostics.connect(self._on_diagnostics)
        self.studio.sig_compile_finished.connect(self._on_compile_finished)
        self.session.events.workspace.connect(self._on_workspace)
        # The red marks belong to the failed compile: they go when its condition ends (revert, undo).
        self.session.events.problems.connect(
            lambda: None if self.session.problems.is_raised(COMPILE) else self.marks.clear())

    def _build_menu(self) -> None:
        menu = self.shell.add_menu("&Edit")
        for action in edit_menu_actions(self.shell.parent_widget(), self.pane.view):
            menu.addAction(action)
        menu.addSeparator()
        self.replace_action = menu.addAction("Find and &Replace", self.open_replace)
        self.replace_action.setShortcut(QtGui.QKeySequence("Ctrl+H"))
        self.revert_action = menu.addAction("Re&vert to Compiler Output", self.revert_current)
        menu.addSeparator()
        self.diff_action = menu.addAction("&Diff…", self.open_diff)
        self.diff_action.setShortcut(QtGui.QKeySequence("Ctrl+D"))
        self.dispatch_diff_action = menu.addAction("Diff Selected &Dispatch…",
                                                   lambda: self.open_diff(dispatch=self.session.selection.dispatch))
        self.passes_action = menu.addAction("&Passes of This Phase", self.open_passes)
        # The dispatch table offers the per-dispatch diff on its rows, too.
        self.shell.add_dispatch_action(self.dispatch_diff_action)
        for event in (self.session.events.workspace, self.session.events.selection, self.session.events.phases):
            event.connect(self._update_actions)  # enabled only when they can act
        self._update_actions()

    def _update_actions(self) -> None:
        ws, selection = self.session.workspace, self.session.selection
        snapshot = ws is not None and selection.phase in SNAPSHOT_PHASES and selection.phase in ws.manifest.phases
        for action in (self.diff_action, self.passes_action, self.revert_action, self.replace_action):
            action.setEnabled(snapshot)
        self.dispatch_diff_action.setEnabled(snapshot and selection.dispatch is not None)

    # -- drafts ---------------------------------------------------------------------

    def _autosave(self, text: str) -> None:
        """Write every draft to the workspace: the one being typed and any stashed on a phase switch."""
        ws, phase = self.session.workspace, self.session.selection.phase
        if ws is None:
            return
        try:
            for other, draft in list(self.session.drafts.items()):
                if other != phase:
                    edit_state.autosave_draft(ws, other, draft)
            if phase in SNAPSHOT_PHASES and phase in ws.manifest.phases:
                if edit_state.autosave_draft(ws, phase, text):
                    if self.session.drafts.get(phase) != text:
                        self.session.set_draft(phase, text)
                else:
                    self.session.drop_draft(phase)
        except (OSError, StudioError) as exc:
            self.studio.error(f"{ws.root}: cannot autosave the edit of {phase}: {exc}")

    def _on_workspace(self) -> None:
        self.marks.clear()
        ws = self.session.workspace
        if ws is not None and self.session.drafts:
            names = ", ".join(sorted(self.session.drafts, key=SNAPSHOT_PHASES.index))
            self.studio.sig_log.emit(f"Restored unsaved edits of {names} (not compiled yet)", False)

    # -- errors in place ------------------------------------------------------------

    def _on_diagnostics(self, phase: str, diagnostics: list) -> None:
        ws = self.session.workspace
        if ws is None or phase not in SNAPSHOT_PHASES:
            return
        error = first_error_in(diagnostics, ws.snapshot_path(phase).name)
        if self.session.selection.phase != phase:
            self.pane.show_phase(phase)
        if not self.pane.edit_action.isChecked():
            self.pane.edit_action.setChecked(True)  # the text as typed, editable again
        if error is not None:
            self.marks.show_error(error.line, error.col, error.message)

    def _on_compile_finished(self, ok: bool) -> None:
        if ok:
            self.marks.clear()

    # -- actions --------------------------------------------------------------------

    def open_replace(self) -> None:
        self.pane.find_bar.open()
        self.replace_bar.setVisible(self.pane.view.is_editable())

    def revert_current(self) -> None:
        ws, phase = self.session.workspace, self.session.selection.phase
        if ws is None or phase not in SNAPSHOT_PHASES or self.studio.is_busy():
            return
        self.autosaver.cancel()
        try:
            changed = edit_state.revert(ws, phase)
        except (OSError, StudioError) as exc:
            self.studio.error(str(exc))
            return
        self.session.drafts.pop(phase, None)
        self.session.snapshot_replaced(phase)
        self.pane.edit_action.setChecked(False)
        self.pane.show_phase(phase)
        self.marks.clear()
        self.studio.sig_log.emit(f"Reverted {phase} to the compiler's output"
                                 + ("; later phases are stale until a resume" if changed else ""), False)
        self.studio.start_indexing()

    def open_diff(self, dispatch: int | None = None) -> DiffDialog | None:
        ws = self.session.workspace
        if ws is None:
            return None
        phase = self.session.selection.phase if self.session.selection.phase in SNAPSHOT_PHASES else "flow"
        self.diff_dialog = DiffDialog(ws, phase, dispatch, self.shell.parent_widget())
        edited = edit_state.is_edited(ws, phase) or phase in self.session.drafts
        self.diff_dialog.choose(phase, AGAINST_ORIGINAL if edited else AGAINST_PREVIOUS_PHASE, dispatch)
        self.diff_dialog.show()
        return self.diff_dialog

    def open_passes(self, phase: str | None = None) -> None:
        """Show the pass view of `phase` (default: the one on show), tracing it in the background."""
        ws = self.session.workspace
        phase = phase or self.session.selection.phase
        if ws is None or phase not in SNAPSHOT_PHASES:
            return
        self.pass_dock.show()
        self.pass_dock.raise_()
        self.pass_view.status.setText(f"Tracing the passes of {phase}…")
        root = ws.root

        def work(report, token):
            from ...core.debug.pass_trace import PassTraceJob  # here: not at the app's start
            from ...core.workspace.workspace import Workspace

            job = PassTraceJob(Workspace.open(root), phase, on_progress=lambda n: report(n))
            token.attach(job.cancel)
            return job.run()

        def progress(n):
            self.pass_view.status.setText(f"Tracing the passes of {phase}: {n} passes so far")

        def failed(exc, tb, gen):
            if not isinstance(exc, Cancelled):
                self.pass_view.status.setText(str(exc))
                self.studio.error(str(exc) if isinstance(exc, StudioError) else f"pass view: internal error: {exc}")

        def done(trace, gen):
            self.pass_view.set_trace(trace)
            self.studio.sig_log.emit(f"Passes of {phase}: {len(trace.passes)}, {len(trace.changed())} changed "
                                     f"the IR", False)
            self.sig_passes_ready.emit(phase)

        self.studio.jobs.start("passes", work, on_done=done, on_failed=failed, on_progress=progress)

