"""Indexing a snapshot in a child process, so that the MLIR parse never holds the app's GIL.

IREE's Python bindings keep the GIL through `ir.Module.parse`: on a worker thread, the two parses of
a 113 MB snapshot froze the GUI thread 4 s each. `build_index` indexes a large snapshot in
`python -m npu_studio.core.ir.dispatch_index.child PATH PHASE` instead (processes.py: its own
process group, killed when we die), which writes the index to its stdout in the chunked form
(chunked.py) that the parent reads back a few hundred records at a time. A StudioError in the child
(SnapshotParseError naming file:line:col, BadFile) comes back as JSON and is raised again here with
the same type and message; a child that dies any other way (killed, a segfault) is a StudioError
naming the snapshot; `attach_stop` (the job's CancelToken.attach) kills it on cancel.

Snapshots under CHILD_MIN_BYTES are indexed in this process: a child costs ~0.7 s of imports on a
loaded 2-core machine, while the in-process parse holds the GIL ~20 ms a MB (measured: 1.8 MB,
37 ms longest gap of a 2 ms ticker thread; 0.2 MB, 24 ms), so below 2 MiB a stall stays far under the
100 ms a frame may take and the common small snapshot is not made slower.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

from ... import errors
from ...errors import Cancelled, StudioError
from ...processes import kill_group, module_command, start_child, stop
from ..mlir_text import SnapshotParseError
from . import chunked
from .indexing import index_file
from .records import PhaseIndex

CHILD_MIN_BYTES = 2 << 20
_ERROR_EXIT = 2  # the child's stdout holds a StudioError as JSON


def build_index(path: str | Path, phase: str, *,
                attach_stop: Callable[[Callable[[], None]], None] | None = None) -> PhaseIndex | chunked.Encoded:
    """`index_file(path, phase)`, in a child process when the snapshot is large (module doc)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # index_file names the problem
    if size < CHILD_MIN_BYTES:
        return index_file(path, phase)
    return index_in_child(path, phase, attach_stop=attach_stop)


def index_in_child(path: str | Path, phase: str, *,
                   attach_stop: Callable[[Callable[[], None]], None] | None = None) -> chunked.Encoded:
    """The index of `path`, built by a child process; its errors raised here as the child met them.
    `attach_stop(stop)` is given a function that kills the child (Cancelled is then raised here)."""
    cmd = [*module_command(__name__), os.fspath(path), phase]
    proc = start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       log_level=logging.DEBUG)  # a helper the user did not ask for (processes.start_child)
    lock, state = threading.Lock(), {"cancelled": False, "reaped": False}

    def cancel() -> None:  # from any thread; a token keeps it after we return: a reaped pid is never killed
        with lock:
            if not state["reaped"] and proc.returncode is None:
                state["cancelled"] = True
                kill_group(proc, "cancelled")

    try:
        if attach_stop is not None:
            attach_stop(cancel)
        out, err = proc.communicate()
    except BaseException as exc:  # Ctrl+C, SIGTERM: the child goes first
        stop(proc, type(exc).__name__)
        raise
    finally:
        with lock:
            state["reaped"] = True
    if state["cancelled"]:
        raise Cancelled("indexing")
    if proc.returncode == 0:
        try:
            return chunked.Encoded(chunked.decode(out), out)
        except ValueError as exc:
            raise StudioError(path, f"the dispatch index process sent an unreadable index ({exc})") from None
    error = _error_from_json(out) if proc.returncode == _ERROR_EXIT else None
    if error is not None:
        raise error
    how = f"ended with {proc.returncode}" if proc.returncode >= 0 else \
        f"was killed by signal {-proc.returncode} ({signal.Signals(-proc.returncode).name})"
    last = err.decode(errors="replace").strip().splitlines()[-1:]
    raise StudioError(path, f"the dispatch index process {how}" + (f": {last[0]}" if last else ""))


def _error_to_json(exc: StudioError) -> bytes:
    fields = {"type": type(exc).__name__, "path": None if exc.path is None else str(exc.path),
              "reason": exc.reason, "line": exc.line, "col": exc.col}
    if isinstance(exc, SnapshotParseError):
        fields["message"] = exc.message
    return json.dumps(fields).encode()


def _error_from_json(data: bytes) -> StudioError | None:
    """The child's StudioError again (None: not the child's JSON, reported as a crash)."""
    try:
        fields = json.loads(data)
        if fields["type"] == SnapshotParseError.__name__:
            return SnapshotParseError(fields["path"], fields["line"], fields["col"], fields["message"])
        cls = getattr(errors, fields["type"], None)
        if not (isinstance(cls, type) and issubclass(cls, StudioError) and cls.__init__ is StudioError.__init__):
            cls = StudioError  # a subclass with its own arguments: the same message under the base type
        return cls(fields["path"], fields["reason"], line=fields["line"], col=fields["col"])
    except (ValueError, KeyError, TypeError):
        return None


def main(argv: list[str]) -> int:
    """The child: index argv's snapshot, write the chunked index (or the StudioError) to stdout."""
    path, phase = argv
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the index stream
    with out:
        try:
            index = index_file(Path(path), phase)
        except StudioError as exc:
            out.write(_error_to_json(exc))
            return _ERROR_EXIT
        chunked.write(index, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
