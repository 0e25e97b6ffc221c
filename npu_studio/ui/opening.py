"""Opening models and workspaces in the window: File > Open, drops, Recent, the command line, a restart.

What opening a model means is decided in the core (core/workspace/reopen.py): an unchanged model
reopens its workspace with nothing compiled; a changed one shows its previous build with a
banner offering Recompile. Recent lists only what opened. A failed import brings back the model
that was open (the Studio reopens it). At close the window records the workspace, phase and
dispatch on show; a start without arguments restores them.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from ..core import problems
from ..core.session import NPU_PHASE
from ..core.workspace.reopen import CHANGED, plan_open  # the plan's action, not the problem
from ..core.workspace.workspace import Workspace, is_model_file

LAST_KEYS = ("session/workspace", "session/phase", "session/dispatch")
PLACES_KEY = "session/places"  # "root<TAB>phase<TAB>dispatch" of the workspaces left last, newest first
MAX_PLACES = 10


class Opener(QtCore.QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.studio = window.studio
        self.changed_model: tuple[Path, Path] | None = None  # (model, workspace) of the banner's Recompile
        self._pending_selection: tuple[str | None, int | None] | None = None
        self._previous: tuple[Path, str | None, int | None] | None = None  # what was open before an import
        self.studio.sig_open_failed.connect(self._bring_back_previous)
        self.studio.sig_model_opened.connect(lambda path: window.recent.remember(Path(path)))
        window.sig_index_finished.connect(self._apply_pending_selection)
        window.error_banner.linkActivated.connect(self._on_link)

    def open(self, path: Path, workspace_dir: Path | None = None) -> bool:
        """Open a model or a workspace folder; False when it did not start (the banner says why)."""
        w = self.window
        path = Path(path)
        if w.is_busy():
            w.show_error(f"{path}: busy with another compile; cancel it first")
            return False
        w.clear_error()
        self.changed_model = None
        if path.is_dir():
            w.save_drafts()
            self.remember_place()
            if self.studio.open_workspace(path):
                w.recent.remember(path)
                self._go_back_to_place(path)
                return True
            return False
        if not is_model_file(path):
            w.show_error(f"{path}: not a model (expected .onnx, .mlir, .mlirbc or a workspace folder)", problems.OPEN)
            return False
        try:
            plan = plan_open(path, workspace_dir)
        except OSError as exc:
            w.show_error(f"{path}: cannot read: {exc.strerror or exc}", problems.OPEN)
            return False
        w.save_drafts()
        self.remember_place()
        if plan.compiles:
            ws, sel = w.workspace, w.session.selection
            self._previous = (ws.root, sel.phase, sel.dispatch) if ws is not None else None
            self.studio.open_model(path, workspace_dir, w.target_combo.currentText())
            return True
        if not self.studio.open_workspace(plan.root):
            return False
        w.recent.remember(path)
        self._go_back_to_place(plan.root)
        self.studio.sig_log.emit(plan.reason, False)
        if plan.action == CHANGED:
            self.changed_model = (path, plan.root)
            w.show_error(f"{plan.reason} <a href=\"recompile\">Recompile</a>", problems.CHANGED)
        return True

    def recompile_changed(self) -> None:
        """The banner's Recompile: import the changed model into its workspace and compile it."""
        if self.changed_model is None or self.window.is_busy():
            return
        model, root = self.changed_model
        self.changed_model = None
        self.window.clear_error()
        self.studio.open_model(model, root, self.window.target_combo.currentText())

    def _bring_back_previous(self, failed: str) -> None:
        """An import failed: the model open before it comes back as it was (its banner stays)."""
        previous, self._previous = self._previous, None
        if previous is None or self.window.workspace is not None:
            return
        root, phase, dispatch = previous
        if self.studio.open_workspace(root):
            self.studio.sig_log.emit(f"{failed} did not open: back to {root}", False)
            self._pending_selection = (phase, dispatch)
            self._select(phase, None)

    def _on_link(self, link: str) -> None:
        if link == "recompile":
            self.recompile_changed()

    # -- the last session ------------------------------------------------------------------

    def _places(self) -> list[tuple[str, str, int]]:
        value = self.window.settings.value(PLACES_KEY) or []
        places = []
        for entry in [value] if isinstance(value, str) else list(value):
            root, _, rest = str(entry).partition("\t")
            phase, _, dispatch = rest.partition("\t")
            places.append((root, phase, int(dispatch) if dispatch.lstrip("-").isdigit() else -1))
        return places

    def remember_place(self) -> None:
        """The phase and dispatch on show, kept for the workspace being left (Recent goes back to them)."""
        ws, sel = self.window.workspace, self.window.session.selection
        if ws is None:
            return
        here = (str(ws.root), sel.phase or "", -1 if sel.dispatch is None else sel.dispatch)
        places = [here] + [p for p in self._places() if p[0] != here[0]]
        self.window.settings.setValue(PLACES_KEY, ["\t".join(map(str, p)) for p in places[:MAX_PLACES]])

    def _go_back_to_place(self, root: Path) -> None:
        """A workspace opened again from Recent or File > Open shows where the user left it."""
        place = next((p for p in self._places() if p[0] == str(Path(root))), None)
        if place is None:
            return
        _, phase, dispatch = place
        self._pending_selection = (phase or None, dispatch if dispatch >= 0 else None)
        self._select(phase or None, None)  # the phase at once; the dispatch once the indexes are in

    def save_last(self, settings: QtCore.QSettings) -> None:
        self.remember_place()
        ws, sel = self.window.workspace, self.window.session.selection
        values = (str(ws.root) if ws is not None else "", sel.phase or "",
                  -1 if sel.dispatch is None else sel.dispatch)
        for key, value in zip(LAST_KEYS, values):
            settings.setValue(key, value)

    def restore_last(self, settings: QtCore.QSettings) -> bool:
        """Reopen the workspace open at the last close (nothing compiles), with its phase and dispatch."""
        root = settings.value(LAST_KEYS[0]) or ""
        if not root or not Workspace.is_workspace(Path(root)):
            return False
        phase = settings.value(LAST_KEYS[1]) or None
        try:
            dispatch = int(settings.value(LAST_KEYS[2], -1))
        except (TypeError, ValueError):
            dispatch = -1
        if not self.studio.open_workspace(Path(root)):
            return False
        self._pending_selection = (phase, dispatch if dispatch >= 0 else None)
        self._select(phase, None)  # the phase at once; the dispatch once the indexes are in
        return True

    def restore_last_after_paint(self, settings: QtCore.QSettings) -> bool:
        """At a start: the window paints first (the workbench, "reopening NAME…"), then the last
        workspace is restored (`restore_last`). False when there is none to restore."""
        root = settings.value(LAST_KEYS[0]) or ""
        if not root or not Workspace.is_workspace(Path(root)):
            return False
        w = self.window
        w.pages.setCurrentIndex(1)
        w.phase_label.setText(f"<b>{Path(root).name}</b> — reopening…")
        _AfterFirstPaint(w, lambda: self.restore_last(settings) or self._back_to_welcome())
        return True

    def _back_to_welcome(self) -> None:
        """The restore did not happen (its banner says why): the first screen again."""
        if self.window.workspace is None:
            self.window.pages.setCurrentIndex(0)
            self.window.phase_label.clear()

    def _apply_pending_selection(self) -> None:
        if self._pending_selection is None:
            return
        phase, dispatch = self._pending_selection
        self._pending_selection = None
        self._select(phase, dispatch)

    def _select(self, phase: str | None, dispatch: int | None) -> None:
        w = self.window
        if w.workspace is None:
            return
        if phase is not None and (phase == NPU_PHASE or phase in w.workspace.manifest.phases):
            w.show_phase(phase)
        if dispatch is not None:
            w.select_dispatch(dispatch)


class _AfterFirstPaint(QtCore.QObject):
    """Runs `then` once `window` has painted for the first time (on the next turn of the event loop)."""

    def __init__(self, window, then):
        super().__init__(window)
        self.window, self.then = window, then
        QtCore.QCoreApplication.instance().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QtCore.QEvent.Type.Paint and isinstance(obj, QtWidgets.QWidget) \
                and obj.window() is self.window:
            QtCore.QCoreApplication.instance().removeEventFilter(self)
            QtCore.QTimer.singleShot(0, self.then)
            self.deleteLater()
        return False
