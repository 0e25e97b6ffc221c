"""The IR pane: the phase on show, its state line, the text (read-only or edited) and its dispatch regions.

What to show for a phase (draft or snapshot, the state line, the NPU program) is the session's
decision (`Session.phase_view`, core/phase_view.py); the pane draws it. Edits live in each phase's
own document (PhaseDocuments); leaving a phase keeps the typed text as a draft through the session.
The regions follow the session: the selected phase's dispatches (the npu phase: each dispatch's
tasks), the selected one marked.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.errors import StudioError, format_error
from ...core.session import NPU_PHASE, Session
from ..ir.find_bar import FindBar
from ..ir.ir_view import IrView, Region
from ..ir.nav_panels import navigable
from ..ir.navigation import IrNavigator
from ..ir.param_view import install_parameter_view
from ..shell import Shell
from ..studio import Studio
from .phase_documents import PhaseDocuments

REGION_COLORS = ("#fff3c4", "#d9f2ff", "#e6ffd9", "#ffe0f0", "#ece0ff", "#ffe8d6")


def region_color(dispatch: int) -> QtGui.QColor:
    return QtGui.QColor(REGION_COLORS[dispatch % len(REGION_COLORS)])


class IrPane(QtCore.QObject):
    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())
        self.session, self.studio, self.shell = session, studio, shell
        self._regions_of: str | None = None  # the phase whose regions are drawn
        self._clicked_in_view = False  # a selection made by a click here marks without scrolling
        self._build_widgets()
        self._build_actions()
        e = session.events
        e.workspace.connect(self._on_workspace)
        e.selection.connect(self._on_selection)
        e.indexes.connect(self._draw_regions)
        e.npu.connect(self._on_npu)
        e.phases.connect(self.update_actions)
        e.phases.connect(self._refresh_label)  # the state line follows the phase (edited, running, failed)
        studio.sig_compile_finished.connect(self._on_compiled)
        studio.sig_busy.connect(lambda _busy: self.update_actions())
        self.view.sig_region_clicked.connect(self._on_region_clicked)

    def _build_widgets(self) -> None:
        self.view = IrView()
        self.find_bar = FindBar(self.view)
        self.phase_docs = PhaseDocuments(self.view)
        install_parameter_view(self.view, lambda: self.session.workspace.params_path if self.session.workspace else None)
        self.navigator = IrNavigator(self.view)  # installed last, asked first; passes on what it does not know
        text_area, self.outline, self.uses = navigable(self.view, self.navigator)
        self.phase_label = QtWidgets.QLabel()
        # A long path never widens the window: the label gives way (its tooltip has it whole).
        self.phase_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.widget = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(self.widget)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.phase_label)
        layout.addWidget(text_area, 1)
        layout.addWidget(self.find_bar)

    def _build_actions(self) -> None:
        parent = self.shell.parent_widget()
        self.edit_action = QtGui.QAction("Edit IR", parent, checkable=True)
        self.edit_action.toggled.connect(self.set_editing)
        self.resume_action = QtGui.QAction("Resume from this phase", parent, triggered=self.resume_from_current)
        self.resume_action.setShortcut("Ctrl+R")
        # Ctrl+F finds in this pane (bound to it, so that the executable editor's own Ctrl+F is not shadowed).
        self.find_action = QtGui.QAction("Find", parent, shortcut=QtGui.QKeySequence.StandardKey.Find,
                                         triggered=self.find_bar.open)
        self.find_action.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.widget.addAction(self.find_action)
        self.update_actions()

    # -- showing a phase -------------------------------------------------------------------

    def show_phase(self, phase: str) -> None:
        ws = self.session.workspace
        if ws is None or (phase != NPU_PHASE and phase not in ws.manifest.phases):
            return
        same = self.session.selection.phase == phase  # shown again (a rebuild): the view keeps its place
        if not same or phase == NPU_PHASE:
            self.stash_current_edit()  # keep what the user typed
        try:
            shown = self.session.phase_view(phase)
        except StudioError as exc:  # missing, unreadable or not UTF-8: one line naming it
            self.shell.show_error(format_error(exc, prog=""))
            return
        if phase == NPU_PHASE:
            self.edit_action.setChecked(False)
            self.view.set_editable(False)
            self.phase_docs.leave()
            self.view.set_text(shown.text)
        elif self.edit_action.isChecked() or shown.is_draft:
            self.phase_docs.show(phase, shown.text)  # its own document: the undo history of this phase
            self.view.set_editable(True)
            self.edit_action.setChecked(True)
        else:
            self.phase_docs.leave()
            self.view.set_text(shown.text, elide=True, keep_place=same)
        self.phase_label.setText(shown.label)
        self.phase_label.setToolTip(str(shown.path) if shown.path is not None else "")
        self._regions_of = None  # the text changed: its regions are drawn again
        if same:
            self._draw_regions()
        self.session.select_phase(phase)  # the other views follow the selection event
        self.update_actions()

    def stash_current_edit(self) -> None:
        """The editor's text, if it differs from the snapshot, becomes the phase's draft."""
        phase = self.session.selection.phase
        if phase is None or phase == NPU_PHASE or not self.view.is_editable() or self.session.workspace is None:
            return
        self.session.stash_edit(phase, self.view.text())

    def goto_location(self, path: str, line: int, col: int) -> None:
        """A `file:line:col` from the log: the snapshot's phase, at that place."""
        ws = self.session.workspace
        if ws is None:
            return
        phase = ws.phase_of(Path(path))
        if phase is None or phase == "start":
            self.shell.show_error(f"{path}:{line}:{col}: not a snapshot of this workspace")
            return
        self.show_phase(phase)
        self.view.goto(line, col)

    # -- following the session ---------------------------------------------------------------

    def _on_workspace(self) -> None:
        """Another model (or one importing): the old one's text goes at once. The same workspace
        read again (the session kept its selection) shows the same phase at the same place."""
        ws, name = self.session.workspace, self.session.model_name
        kept = self.session.selection.phase
        if ws is not None and not self.view.is_editable() and (kept == NPU_PHASE or kept in ws.snapshots()):
            self._regions_of = None
            self.show_phase(kept)
            return
        self.edit_action.setChecked(False)
        self.view.set_editable(False)
        self.phase_docs.clear()
        self.view.set_text("")
        self.view.set_regions([])
        self._regions_of = None
        self.phase_label.setText(f"<b>{name}</b> — importing…" if ws is None and name else "")
        if ws is not None and ws.snapshots():
            self.show_phase("flow" if "flow" in ws.snapshots() else next(iter(ws.snapshots())))
        self.update_actions()

    def _on_compiled(self, ok: bool) -> None:
        """The new snapshots replace what the pane shows (a draft stays a draft)."""
        ws = self.session.workspace
        if ok and ws is not None:
            phase = self.session.selection.phase
            self.show_phase(phase if phase == NPU_PHASE or phase in ws.snapshots() else "flow")

    def _refresh_label(self) -> None:
        ws, phase = self.session.workspace, self.session.selection.phase
        if ws is not None and phase in ws.manifest.phases and phase != NPU_PHASE:
            self.phase_label.setText(self.session.snapshot_label(phase))

    def _on_npu(self) -> None:
        if self.session.selection.phase == NPU_PHASE:
            self.show_phase(NPU_PHASE)
        else:  # the regions may change; the view stays where the user is (a late NPU result moved it)
            self._draw_regions(reveal=False)

    def _on_selection(self) -> None:
        if self.session.selection.phase != self._regions_of:
            self._draw_regions()
        else:
            self._mark_selection()

    def _draw_regions(self, reveal: bool = True) -> None:
        """The phase's dispatches as tinted line ranges (the npu phase: each dispatch's tasks)."""
        phase = self.session.selection.phase
        regions = []
        if phase == NPU_PHASE:
            r = self.session.npu
            if r is not None:
                regions = [Region(d, a, b, region_color(d)) for d, (a, b) in r.ranges.items()]
        else:
            index = self.session.index_of(phase)
            for rec in index.dispatches if index is not None else ():
                if rec.text_range is not None:
                    regions.append(Region(rec.index, rec.text_range.start_line, rec.text_range.end_line,
                                          region_color(rec.index)))
        self.view.set_regions(regions)
        self._regions_of = phase
        self._mark_selection(reveal)

    def _on_region_clicked(self, dispatch: int) -> None:
        self._clicked_in_view = True
        try:
            self.session.select_dispatch(dispatch)
        finally:
            self._clicked_in_view = False

    def _mark_selection(self, reveal: bool = True) -> None:
        selection = self.session.selection
        dispatch = selection.dispatch
        has_region = dispatch is not None and any(r.key == dispatch for r in self.view.regions())
        self.view.mark_region(dispatch if has_region else None, reveal=reveal and not self._clicked_in_view)
        if selection.task is not None and selection.phase == NPU_PHASE:
            self.goto_npu_task(selection.task)

    def goto_npu_task(self, task: int) -> None:
        """Scroll the NPU IR to the task's op (`%t<id> = "npu...."`)."""
        needle = f"%t{task} = "
        for number, line in enumerate(self.view.text().splitlines(), start=1):
            if line.lstrip().startswith(needle):
                self.view.goto(number, line.index(needle) + 1)
                return

    # -- editing -----------------------------------------------------------------------------

    def set_editing(self, on: bool) -> None:
        # Edits happen on the full text, in the phase's own document (its undo history), at the
        # scroll and cursor line the display had.
        phase = self.session.selection.phase
        if on and self.session.workspace is not None and phase not in (None, NPU_PHASE):
            self.phase_docs.show(phase, self.view.text())
        self.view.set_editable(on)
        self.update_actions()

    def resume_from_current(self) -> None:
        phase = self.session.selection.phase
        if self.session.workspace is None or phase in (None, NPU_PHASE) or self.studio.is_busy():
            return
        if self.studio.resume(phase, self.view.text()):
            self.view.set_editable(False)  # the text is recorded: no draft to stash
            self.edit_action.setChecked(False)

    def update_actions(self) -> None:
        has_ws = self.session.workspace is not None
        snapshot = self.session.selection.phase not in (None, NPU_PHASE)
        self.resume_action.setEnabled(has_ws and not self.studio.is_busy() and snapshot)
        self.edit_action.setEnabled(has_ws and snapshot)
