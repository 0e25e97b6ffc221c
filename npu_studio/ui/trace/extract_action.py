""""Extract reproducer…" on a dispatch: `core.debug.extract` as a background job.

A row action of the dispatch table (through the shell). The user picks a
folder; the reproducer goes into a new `dispatch-<N>-reproducer` folder in
it (never over anything there), on the trace's default inputs, so it holds
the values the trace judged. The job runs on its own copy of the workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.errors import Cancelled, StudioError
from ...core.session import Session

if TYPE_CHECKING:
    from ..shell import Shell
    from ..studio import Studio

EXTRACT_JOB = "extract"


def new_folder(parent: Path, index: int) -> Path:
    """`parent/dispatch-<index>-reproducer`, or with `-2`, `-3`... when that name is taken."""
    base = Path(parent) / f"dispatch-{index}-reproducer"
    k, path = 2, base
    while path.exists():
        path, k = base.with_name(f"{base.name}-{k}"), k + 1
    return path


class ExtractAction(QtCore.QObject):
    sig_done = QtCore.Signal(object)  # the Reproducer written

    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())
        self.session, self.studio, self.shell = session, studio, shell
        # asks where to write (the folder, or None when cancelled); replaced in tests
        self.choose_folder: Callable[[int], Path | None] = self._ask_folder
        self.action = QtGui.QAction("Extract reproducer…", self)
        self.action.setToolTip("Write the selected dispatch as a folder that IREE's tools alone can run "
                               "(npu-studio extract)")
        self.action.triggered.connect(self.start)
        shell.add_dispatch_action(self.action)

    def _ask_folder(self, index: int) -> Path | None:
        path = QtWidgets.QFileDialog.getExistingDirectory(
            self.shell.parent_widget(), f"Folder for the reproducer of dispatch #{index}")
        return Path(path) if path else None

    def start(self) -> None:
        ws, index = self.session.workspace, self.session.selection.dispatch
        if ws is None or index is None:
            self.shell.set_status("Extract reproducer: select a dispatch first")
            return
        parent = self.choose_folder(index)
        if parent is None:
            return
        out, root = new_folder(parent, index), ws.root
        self.shell.set_status(f"Extracting dispatch #{index} to {out}...")

        def work(report, token):
            from ...core.debug.extract import extract
            from ...core.workspace.workspace import Workspace

            if token.cancelled:
                raise Cancelled("extract")
            return extract(Workspace.open(root), index, out)

        self.studio.jobs.start(EXTRACT_JOB, work, on_done=self._on_done, on_failed=self._on_failed)

    def _on_done(self, repro, generation: int) -> None:
        self.shell.set_status(f"Dispatch #{repro.index} extracted to {repro.folder}")
        self.shell.append_log("\n".join(repro.summary_lines()))
        self.sig_done.emit(repro)

    def _on_failed(self, exc: Exception, tb: str, generation: int) -> None:
        if isinstance(exc, Cancelled):
            return
        message = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
        self.shell.set_status("Extract reproducer failed")
        self.shell.append_log(f"Extract reproducer failed: {message}", error=True)
