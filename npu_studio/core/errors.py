"""Errors the core reports to users: one line that names the file and the reason.

Every failure caused by the user's input is a `StudioError`: it carries the
file (a `Path`, or None when no file is involved), an optional line and
column, and a one-line reason. `format_error` is the only formatter; the CLI
handler and the app's banner both use it.
"""

from __future__ import annotations

from pathlib import Path


# Control characters in a file name would split or garble the one line: shown as Python escapes.
_CONTROL_ESCAPES = {c: repr(chr(c))[1:-1] for c in [*range(32), 127]}


def shown_path(path: str | Path) -> str:
    """A file name as one printable line: undecodable bytes as `\\udcff`, a newline as `\\n`."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8").translate(_CONTROL_ESCAPES)


class StudioError(Exception):
    """A failure the user can act on. `str()` is the one-line message."""

    def __init__(self, path: str | Path | None, reason: str, *, line: int | None = None, col: int | None = None):
        self.path = Path(path) if path is not None else None
        self.reason = " ".join(str(reason).split())  # always one line
        self.line, self.col = line, col
        where = shown_path(self.path) if self.path else ""
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


class RunFailed(StudioError):
    """The runtime could not run the module: missing inputs, no such function, a crash or a time-out."""


class BadFile(StudioError):
    """A file the user gave (or one in a workspace) cannot be read or has the wrong content."""


class WorkspaceError(StudioError):
    """A workspace folder cannot be used as it is."""


class WorkspaceBusy(WorkspaceError):
    """Another process is writing to the workspace."""


def format_error(exc: StudioError, prog: str = "npu-studio") -> str:
    """The one line shown for `exc`: on the CLI's stderr and in the app's banner."""
    return f"{prog}: error: {exc}" if prog else str(exc)


# What a user does about a write the file system refused (every write is atomic: nothing half-written).
_HINTS = {28: " (the previous state is kept; free some space and run it again)",  # ENOSPC
          122: " (the previous state is kept)",  # EDQUOT
          30: " (this command writes into the workspace; copy it somewhere writable)"}  # EROFS


def os_error(path: str | Path, exc: OSError, doing: str = "") -> BadFile:
    """A `BadFile` for an OSError: `path: cannot write: Is a directory`."""
    reason = (exc.strerror or type(exc).__name__) + _HINTS.get(exc.errno, "")
    return BadFile(exc.filename if exc.filename else path, f"{doing}: {reason}" if doing else reason)
