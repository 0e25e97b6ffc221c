"""Runs module inspection and disassembly as background jobs for the module dock.

Another model or a new build (new indexes) drops what the dock shows.
"""

from __future__ import annotations

from PySide6 import QtCore

from ...core.errors import StudioError
from ...core.session import Session
from ..jobs import JobManager
from .dock import ModuleDock

MODULE_JOB = "module"


class ModuleController(QtCore.QObject):
    sig_message = QtCore.Signal(str)

    def __init__(self, session: Session, jobs: JobManager, dock: ModuleDock, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session, self.jobs, self.dock = session, jobs, dock
        session.events.workspace.connect(self._drop)
        session.events.indexes.connect(self._drop)
        dock.sig_inspect_requested.connect(self.inspect)
        dock.sig_disassemble_requested.connect(self.disassemble)
        dock.sig_dispatch_selected.connect(session.select_dispatch)

    def _drop(self) -> None:
        if self.dock.contents is not None:
            self.dock.show_contents(None, "The build changed: inspect the module again.")

    def _start(self, work, on_done) -> None:
        ws = self.session.workspace
        if ws is None:
            return
        root = ws.root
        self.dock.set_busy(True, "Reading the module...")

        def job(report, token):
            from ...core.workspace.workspace import Workspace

            return work(Workspace.open(root))

        self.jobs.start(MODULE_JOB, job, on_done=on_done, on_failed=self._failed)

    def inspect(self) -> None:
        from ...core.debug.module_contents import inspect_module

        self._start(inspect_module, lambda contents, gen: self.dock.show_contents(contents))

    def disassemble(self, executable: str) -> None:
        from ...core.debug.module_contents import disassemble

        contents = self.dock.contents

        def done(text, gen):
            self.dock.set_busy(False)
            self.dock.contents = contents
            self.dock.show_text(text)

        self._start(lambda ws: disassemble(ws, executable), done)

    def _failed(self, exc: Exception, tb: str, generation: int) -> None:
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.dock.show_contents(None, f"Cannot read the module: {message}")
        self.sig_message.emit(f"Module: {message}")
