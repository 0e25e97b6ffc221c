"""`npu-studio --screenshot OUT.png [--size WxH] [--all-docks] [--raise-dock NAME] [--phase P] [--select-dispatch N] FILE`.

Opens the window at the size asked for, opens the model (compiling it, or reopening its
workspace), waits until every background job has settled (compile, indexes, NPU pipeline,
simulation), lays out the docks, selects what was asked and grabs the window into a PNG.
Its settings live in a temporary folder: a screenshot never changes the user's layout or
Recent list. Used for the README, for bug reports and by the tests.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from ..core.session import NPU_PHASE
from .layout import bring_to_front
from .main_window import MainWindow

TIMEOUT_S = 600.0
SETTLED_POLLS = 3  # polls in a row with no job running: the chain of jobs has ended


def say(line: str) -> None:
    print(f"npu-studio: {line}", file=sys.stderr, flush=True)


class Screenshot(QtCore.QObject):
    def __init__(self, app: QtWidgets.QApplication, args, folder: Path):
        super().__init__()
        self.app, self.args = app, args
        settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        self.window = MainWindow(settings)
        self.errors: list[str] = []
        self.window.studio.sig_error.connect(self.errors.append)
        self.started = time.perf_counter()
        self.quiet_polls = 0
        self.raised_again = False
        self.code: int | None = None
        self.timer = QtCore.QTimer(self, interval=200)
        self.timer.timeout.connect(self._poll)

    def start(self) -> None:
        w, h = self.args.window_size
        self.window.resize(w, h)
        self.window.move(0, 0)
        if self.args.all_docks:
            self.window.show_all_docks()
        if not self._raise_asked():
            return self._finish(2, f"--raise-dock {self.args.raise_dock}: no such dock")
        self.window.show()
        self.window.resize(w, h)  # the size asked for, even where the screen is smaller (offscreen)
        QtCore.QTimer.singleShot(0, self._open)

    def _open(self) -> None:
        self.window.open_path(self.args.paths[0], self.args.workspace)
        self.timer.start()

    def _poll(self) -> None:
        if time.perf_counter() - self.started > TIMEOUT_S:
            return self._finish(1, f"{self.args.paths[0]}: not ready after {TIMEOUT_S:.0f} s")
        if self.window.jobs.is_running():
            self.quiet_polls = 0
            return
        self.quiet_polls += 1
        if self.quiet_polls < SETTLED_POLLS:
            return
        if self.window.workspace is None:
            self.timer.stop()
            return self._finish(1, self.errors[0] if self.errors else f"{self.args.paths[0]}: not opened")
        if not self.raised_again:  # opening a model brings its own docks to the front (Executables):
            self.raised_again, self.quiet_polls = True, 0  # the asked one again, and what it starts settles
            self._raise_asked()
            return
        self.timer.stop()
        self._select()

    def _raise_asked(self) -> bool:
        """Show and raise the --raise-dock dock (if one was asked); False when there is no such dock."""
        raised = getattr(self.args, "raise_dock", None)
        if not raised:
            return True
        dock = self.window.findChild(QtWidgets.QDockWidget, raised)
        if dock is None:
            return False
        bring_to_front(dock)
        return True

    def _select(self) -> None:
        w, args = self.window, self.args
        phase = args.phase or w.current_phase or "flow"
        if phase != NPU_PHASE and phase not in w.workspace.manifest.phases:
            known = ", ".join([*w.workspace.manifest.phases, NPU_PHASE])
            return self._finish(2, f"--phase {phase}: no such phase in this workspace (phases: {known})")
        w.show_phase(phase)
        if args.select_dispatch is not None:
            index = w.session.index_of(phase)
            numbers = {r.index for r in index.dispatches} if index is not None else set()
            if args.select_dispatch not in numbers:
                return self._finish(2, f"--select-dispatch {args.select_dispatch}: no such dispatch in {phase} "
                                       f"({len(numbers)} dispatches)")
            w.select_dispatch(args.select_dispatch)
        QtCore.QTimer.singleShot(700, self._grab)  # let the layout and every pending paint land

    def _grab(self) -> None:
        pixmap = self.window.grab()
        if not pixmap.save(str(self.args.screenshot), "PNG"):
            return self._finish(1, f"{self.args.screenshot}: cannot write the PNG")
        say(f"wrote {self.args.screenshot} ({pixmap.width()}x{pixmap.height()})")
        self._finish(0)

    def _finish(self, code: int, message: str | None = None) -> None:
        self.timer.stop()
        if message:
            say(message)
        self.code = code
        self.window.session.drafts.clear()  # a screenshot never writes the user's drafts
        self.window.close()
        self.app.exit(code)


def take_screenshot(app: QtWidgets.QApplication, args) -> int:
    with tempfile.TemporaryDirectory(prefix="npu-studio-shot-") as folder:
        shot = Screenshot(app, args, Path(folder))
        shot.start()
        code = app.exec()
        return shot.code if shot.code is not None else code
