"""Choose what to diff in a workspace (two phases, an edit against the compiler, two builds, one dispatch)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.compile.phases import PHASES, SNAPSHOT_PHASES
from ...core.debug.phase_diff import workspace_diff
from ...core.errors import StudioError
from ...core.ir.diff import DiffOptions
from ...core.workspace.workspace import Workspace
from .diff_view import DiffView

AGAINST_PREVIOUS_PHASE = "the phase before it"
AGAINST_ORIGINAL = "its compiler output"
AGAINST_PREVIOUS_BUILD = "itself before the last resume"
WISHED_SIZE = QtCore.QSize(1300, 800)  # two 90-column panes side by side, where the screen has room


def screen_room(widget: QtWidgets.QWidget) -> QtCore.QRect:
    """The available geometry (no panels) of the screen `widget` (or its parent) is on."""
    screen = widget.screen() or QtGui.QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QtCore.QRect(0, 0, *WISHED_SIZE.toTuple())


def fit_on_screen(dialog: QtWidgets.QWidget) -> None:
    """The dialog's frame (title bar and borders too) inside the screen's available geometry."""
    room = screen_room(dialog)
    frame = dialog.frameGeometry()
    extra = frame.size() - dialog.geometry().size()  # the window manager's title bar and borders
    if not extra.isValid() or extra.height() == 0:
        extra = QtCore.QSize(16, 40)  # before the first show the frame is not known yet: a usual one
    size = dialog.size().boundedTo(room.size() - extra)
    if size != dialog.size():
        dialog.resize(size)
    frame = dialog.frameGeometry()
    x = min(max(frame.x(), room.left()), room.right() + 1 - frame.width())
    y = min(max(frame.y(), room.top()), room.bottom() + 1 - frame.height())
    if (x, y) != (frame.x(), frame.y()):
        dialog.move(x, y)


class DiffDialog(QtWidgets.QDialog):
    def __init__(self, ws: Workspace, phase: str, dispatch: int | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Diff")
        self.resize(WISHED_SIZE)
        fit_on_screen(self)
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
        for box in (self.phase_a, self.against):  # they shrink with the dialog, their lists stay whole
            box.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(12)
            box.view().setMinimumWidth(box.view().sizeHintForColumn(0) + 24)
        self.error = QtWidgets.QLabel()
        self.error.setStyleSheet("color:#8a0010")
        self.view = DiffView()
        form = QtWidgets.QHBoxLayout()
        for label, w in (("Phase", self.phase_a), ("against", self.against), ("dispatch #", self.dispatch)):
            form.addWidget(QtWidgets.QLabel(label))
            form.addWidget(w)
        form.addStretch(1)
        shown = QtWidgets.QHBoxLayout()  # what is compared, on a row of its own: the dialog fits 800 pixels
        shown.addWidget(self.locations)
        shown.addWidget(self.constants)
        shown.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(shown)
        layout.addWidget(self.error)
        layout.addWidget(self.view, 1)
        for w in (self.phase_a, self.against):
            w.currentIndexChanged.connect(self.refresh)
        self.dispatch.valueChanged.connect(self.refresh)
        self.locations.toggled.connect(self.refresh)
        self.constants.toggled.connect(self.refresh)

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802
        super().showEvent(event)
        # placed by the window manager now (centred on the main window): keep the whole frame on screen
        QtCore.QTimer.singleShot(0, lambda: fit_on_screen(self))

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
