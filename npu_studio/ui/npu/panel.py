"""The NPU backend's controls: the target picker and editor, Run on NPU.

(The `npu` phase's text and the NPU columns of the dispatch table are the session's:
core/phase_view.py and core/npu_columns.py.) `NpuPanel` reads the NPU result and the target from the session and sends the user's
intents (pick a target, apply an edit, re-run) to the Studio, which runs the pipeline as a
job. It builds its own menu, toolbar and editor dock; the window only places them.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from ...core.build_summary import summarize_target
from ...core.npu.store import workspace_io
from ...core.npu.target import target_store
from ...core.session import NPU_SOURCE, Session
from ...resources import TARGETS_DIR
from ..studio import Studio
from .target_editor import TargetEditor

AFTER_PHASE = NPU_SOURCE
SETTINGS_KEY = "npu/target"
DEFAULT_TARGET = TARGETS_DIR / "default.toml"


class NpuPanel(QtCore.QObject):
    sig_finished = QtCore.Signal(bool)  # True: a new result is shown; False: the run failed

    def __init__(self, session: Session, studio: Studio, settings: QtCore.QSettings,
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.session, self.studio, self.settings = session, studio, settings
        saved = settings.value(SETTINGS_KEY)
        session.app_target = session.target = Path(saved) if saved and Path(saved).is_file() else DEFAULT_TARGET
        studio.sig_npu_finished.connect(self.sig_finished)
        self._build_ui(parent)
        session.events.target.connect(self._on_target)
        for event in (session.events.workspace, session.events.phases, session.events.npu):
            event.connect(self._update_actions)  # enabled only when they can act
        self._on_target()
        self._update_actions()

    def _update_actions(self) -> None:
        self.run_action.setEnabled(self.session.can_run_npu() and not self.is_running())
        ws = self.session.workspace
        built = ws is not None and ws.vmfb_path is not None and ws.vmfb_path.is_file()
        for action in (self.run_on_npu_action, self.run_standalone_action):  # they run the workspace's build
            action.setEnabled(built)

    # -- widgets (placed by the window) -----------------------------------------------------

    def _build_ui(self, parent) -> None:
        self.editor = TargetEditor()
        self.editor.sig_apply.connect(self.apply_target_text)
        self.dock = QtWidgets.QDockWidget("NPU target", parent)
        self.dock.setObjectName("npuTargetDock")
        self.dock.setWidget(self.editor)
        self.dock.hide()
        self.menu = QtWidgets.QMenu("&NPU", parent)
        self.choose_action = self.menu.addAction("NPU &target file…", self.choose_target_dialog)
        self.edit_action = self.menu.addAction("&Edit NPU target", self.edit_target)
        self.run_action = self.menu.addAction("&Re-run NPU pipeline", self.run)
        self.run_on_npu_action = self.menu.addAction("Run on N&PU (IREE runtime + NPU plugin)",
                                                     self.studio.run_on_npu)
        self.run_standalone_action = self.menu.addAction(
            "Run on NPU, &standalone (iree-run-module + the plugin's C interpreter)",
            lambda: self.studio.run_on_npu("standalone"))
        self.picker = QtWidgets.QComboBox()
        self.picker.setAccessibleName("NPU target")
        self.picker.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.picker.activated.connect(self._on_picked)
        self.toolbar = QtWidgets.QToolBar("NPU", parent)
        self.toolbar.setObjectName("npuToolbar")
        self.toolbar.addWidget(QtWidgets.QLabel(" NPU target: "))
        self.toolbar.addWidget(self.picker)
        self.toolbar.addAction(self.edit_action)

    def refresh_picker(self) -> None:
        """Bundled and user targets, and this model's own recorded target when it uses that."""
        target = self.session.target
        entries = [(doc.label, doc.path) for doc in target_store.list_targets()]
        ws = self.session.workspace
        recorded = workspace_io.recorded_target(ws) if ws is not None else None
        if recorded is not None and recorded.path == target:
            entries.append((summarize_target(target, ws).label, recorded.path))
        elif all(path != target for _, path in entries):
            entries.append((target.name, target))
        blocked = self.picker.blockSignals(True)
        self.picker.clear()
        for label, path in entries:
            self.picker.addItem(label, str(path))
        self.picker.setCurrentIndex(next(i for i, (_, p) in enumerate(entries) if p == target))
        self.picker.setToolTip(f"NPU target: {target}")
        self.picker.blockSignals(blocked)

    def _on_target(self) -> None:
        self.settings.setValue(SETTINGS_KEY, str(self.session.app_target))
        self.refresh_picker()
        if self.dock.isVisible() and self.editor.path() != self.session.target:
            self.editor.load(self.session.target)

    def _on_picked(self, row: int) -> None:
        path = Path(self.picker.itemData(row))
        if path != self.session.target:
            self.studio.set_target(path)

    # -- intents ------------------------------------------------------------------------

    def target_path(self) -> Path:
        return self.session.target

    def set_target(self, path: str | Path) -> None:
        """Use the target at `path` (remembered for the next models) and re-run."""
        self.studio.set_target(Path(path))

    def choose_target_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self.editor, "NPU target", str(self.session.target.parent), "NPU targets (*.toml);;All files (*)")
        if path:
            self.set_target(path)

    def edit_target(self) -> None:
        self.editor.load(self.session.target)
        self.dock.show()
        self.dock.raise_()
        self.editor.edit.setFocus()

    def apply_target_text(self, text: str) -> None:
        """Check and save the editor's text, then re-run. An invalid text is reported
        (file:line: key: reason) and the last result stays, stale. A bundled target is
        never written: its edit becomes a named user target the picker lists."""
        dest = self.studio.apply_target_edit(text, self.editor.path() or self.session.target,
                                             on_rejected=self.editor.show_error)
        if dest is not None:
            self.editor.set_path(dest)
            self.editor.edit.document().setModified(False)

    def run(self) -> None:
        self.studio.run_npu()

    # -- what the views show ------------------------------------------------------------

    @property
    def state(self) -> str:
        return self.session.npu_state()

    def is_running(self) -> bool:
        return self.studio.jobs.is_running("npu")
