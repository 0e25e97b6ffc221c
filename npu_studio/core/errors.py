"""Errors the core reports to users: one line that names the file and the reason."""

from __future__ import annotations

from pathlib import Path


class StudioError(Exception):
    """A failure the user can act on. `str()` is the one-line message."""

    def __init__(self, path: str | Path | None, reason: str, *, line: int | None = None, col: int | None = None):
        self.path = Path(path) if path is not None else None
        self.reason = " ".join(reason.split())  # always one line
        self.line, self.col = line, col
        where = str(self.path) if self.path else ""
        if where and line is not None:
            where += f":{line}" + (f":{col}" if col is not None else "")
        super().__init__(f"{where}: {self.reason}" if where else self.reason)


class ImportFailed(StudioError):
    """The model file could not be read or imported to MLIR."""


class CompileFailed(StudioError):
    """iree-compile failed; `log` holds its full stderr, `reproducer` a crash reproducer if written."""

    def __init__(self, path, reason, *, log: str = "", reproducer: Path | None = None,
                 line: int | None = None, col: int | None = None):
        super().__init__(path, reason, line=line, col=col)
        self.log = log
        self.reproducer = reproducer


class Cancelled(StudioError):
    """The user cancelled the operation."""

    def __init__(self, what: str = "compile"):
        super().__init__(None, f"{what} cancelled")
        self.finished: list = []  # a compile's phases that had finished, kept (compiler.PhaseTiming)
