"""`npu-studio --self-test`: the app opens the bundled example, compiles it,
indexes every phase and runs the NPU pipeline, as a user would, then exits.

Exit 0 when every step finished and their results agree; else 1 with one line
saying which step failed. Meant for an installed wheel or a bundle ("does this
copy work on this machine?"), so it keeps its workspace and settings in a
temporary folder and leaves nothing of the user's touched.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from .core.compile.phases import SNAPSHOT_PHASES
from .resources import EXAMPLE_MODEL
from .ui.main_window import MainWindow

TIMEOUT_S = 300.0


def say(line: str) -> None:
    print(f"self-test: {line}", flush=True)


class SelfTest(QtCore.QObject):
    def __init__(self, app: QtWidgets.QApplication, folder: Path):
        super().__init__()
        self.app = app
        self.folder = folder
        self.started = time.perf_counter()
        self.events: dict[str, bool] = {}
        settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        self.window = MainWindow(settings)
        self.window.sig_compile_finished.connect(lambda ok: self._event("compile", ok))
        self.window.sig_index_finished.connect(lambda: self._event("index", True))
        self.window.npu.sig_finished.connect(lambda ok: self._event("npu", ok))
        self.result: int | None = None
        self.timer = QtCore.QTimer(self, interval=50)
        self.timer.timeout.connect(self._poll)

    def start(self) -> None:
        self.window.show()
        QtCore.QTimer.singleShot(0, self._shown)

    def _shown(self) -> None:
        # benchmarks/app_start.py times the launch up to this line; CPU time is its load-free twin.
        say(f"window shown (process CPU {time.process_time():.2f} s)")
        self.window.open_path(EXAMPLE_MODEL, self.folder / "workspace")
        self.timer.start()

    def _event(self, name: str, ok: bool) -> None:
        self.events[name] = ok
        say(f"{name} {'finished' if ok else 'FAILED'} at {time.perf_counter() - self.started:.2f} s")

    def _poll(self) -> None:
        try:
            self._step()
        except Exception as exc:  # a self-test that breaks must still end, and say how
            self._finish(f"internal error: {type(exc).__name__}: {exc}")

    def _step(self) -> None:
        failed = [name for name, ok in self.events.items() if not ok]
        if failed:
            self._finish(f"{failed[0]} failed: {self.window.error_banner.text() or 'see the log'}")
        elif all(name in self.events for name in ("compile", "index", "npu")):
            self._finish(self._check_results())
        elif time.perf_counter() - self.started > TIMEOUT_S:
            missing = [n for n in ("compile", "index", "npu") if n not in self.events]
            self._finish(f"timed out after {TIMEOUT_S:.0f} s waiting for {', '.join(missing)}")

    def _check_results(self) -> str | None:
        """None when compile, index and NPU results agree; else what is wrong."""
        ws = self.window.workspace
        missing = [p for p in SNAPSHOT_PHASES if ws is None or p not in ws.manifest.phases]
        if missing:
            return f"compile left no snapshot of {', '.join(missing)}"
        flow = self.window.indexes.get("flow")
        if flow is None or not flow.dispatches:
            return "the dispatch index of the flow phase is empty"
        result = self.window.session.npu
        if result is None:
            return "the NPU pipeline finished without a result"
        program = result.program
        if len(program.dispatches) != len(flow.dispatches) or not program.tasks:
            return (f"the NPU program has {len(program.dispatches)} dispatches and {len(program.tasks)} tasks "
                    f"for {len(flow.dispatches)} dispatches in the flow index")
        say(f"{len(ws.manifest.phases)} phases compiled, {len(flow.dispatches)} dispatches indexed, "
            f"{result.on_npu} on the NPU in {len(program.tasks)} tasks")
        return None

    def _finish(self, problem: str | None) -> None:
        self.timer.stop()
        if problem is None:
            say(f"passed in {time.perf_counter() - self.started:.2f} s")
            self.result = 0
        else:
            print(f"self-test: FAILED: {problem}", file=sys.stderr, flush=True)
            self.result = 1
        self.window.close()
        self.app.exit(self.result)


def _drop_offscreen_noise(mode, context, message: str) -> None:
    # The offscreen platform warns about window size hints on every show; nothing a user can act on.
    if message != "This plugin does not support propagateSizeHints()":
        print(message, file=sys.stderr)


def run_self_test(app: QtWidgets.QApplication) -> int:
    if app.platformName() == "offscreen":
        QtCore.qInstallMessageHandler(_drop_offscreen_noise)
    with tempfile.TemporaryDirectory(prefix="npu-studio-self-test-") as folder:
        test = SelfTest(app, Path(folder))
        test.start()
        app.exec()
        return 1 if test.result is None else test.result
