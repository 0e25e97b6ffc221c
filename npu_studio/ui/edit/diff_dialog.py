"""Choose what to diff in a workspace (two phases, an edit against the compiler, two builds, one dispatch)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from ...core.compile.phases import PHASES, SNAPSHOT_PHASES
from ...core.debug.phase_diff import workspace_diff
from ...core.errors import StudioError
from ...core.ir.diff import DiffOptions
from ...core.workspace.workspace import Workspace
from .diff_view import DiffView

AGAINST_PREVIOUS_PHASE = "the phase before it"
AGAINST_ORIGINAL = "its compiler output"
AGAINST_PREVIOUS_BUILD = "itself before the last resume"


class DiffDialog(QtWidgets.QDialog):
    def __init__(self, ws: Workspace, phase: str, dispatch: int | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Diff")
        self.resize(1300, 800)
        self.ws = ws
        self.phase_a = QtWidgets.QComboBox()
        self.phase_a.addItems(SNAPSHOT_PHASES)
        self.phase_a.setCurrentText(phase if phase in SNAPSHOT_PHASES else "flow")
        self.against = QtWidgets.QComboBox()
        self.against.addItems([AGAINST_PREVIOUS_PHASE, AGAINST_ORIGINAL, AGAINST_PREVIOUS_BUILD,
                               *(f"phase {p}" for p in SNAPSHOT_PHASES)])
        self.dispatch = QtWidgets.QSpinBox()
        self.dispatch.setRange(-1, 100000)
        self.dispatch.setSpecialValueText("whole module")
        self.dispatch.setValue(dispatch if dispatch is not None else -1)
        self.locations = QtWidgets.QCheckBox("Locations")
        self.constants = QtWidgets.QCheckBox("Constants in full")
        self.error = QtWidgets.QLabel()
        self.error.setStyleSheet("color:#8a0010")
        self.view = DiffView()
        form = QtWidgets.QHBoxLayout()
        for label, w in (("Phase", self.phase_a), ("against", self.against), ("dispatch #", self.dispatch)):
            form.addWidget(QtWidgets.QLabel(label))
            form.addWidget(w)
        form.addWidget(self.locations)
        form.addWidget(self.constants)
        form.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.view, 1)
        for w in (self.phase_a, self.against):
            w.currentIndexChanged.connect(self.refresh)
        self.dispatch.valueChanged.connect(self.refresh)
        self.locations.toggled.connect(self.refresh)
        self.constants.toggled.connect(self.refresh)

    def choose(self, phase_a: str, against: str, dispatch: int | None = None) -> None:
        """Pick what to compare (the combo texts) and show it."""
        for w in (self.phase_a, self.against, self.dispatch):
            w.blockSignals(True)
        self.phase_a.setCurrentText(phase_a)
        self.against.setCurrentText(against)
        self.dispatch.setValue(dispatch if dispatch is not None else -1)
        for w in (self.phase_a, self.against, self.dispatch):
            w.blockSignals(False)
        self.refresh()

    def refresh(self) -> None:
        a, against = self.phase_a.currentText(), self.against.currentText()
        kwargs = {"original": against == AGAINST_ORIGINAL, "previous_build": against == AGAINST_PREVIOUS_BUILD}
        phase_b = against.removeprefix("phase ") if against.startswith("phase ") else None
        if phase_b is not None:
            a, phase_b = (a, phase_b) if PHASES.index(a) <= PHASES.index(phase_b) else (phase_b, a)
        dispatch = self.dispatch.value() if self.dispatch.value() >= 0 else None
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            diff = workspace_diff(self.ws, a, phase_b, dispatch=dispatch,
                                  options=DiffOptions(self.locations.isChecked(), self.constants.isChecked()), **kwargs)
        except (StudioError, OSError) as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        self.error.hide()
        self.view.set_diff(diff)
