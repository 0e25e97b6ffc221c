"""Child processes that never outlive us.

Each child (iree-compile, the runtime runner) starts in its own process
group, so one `killpg` stops it and anything it spawned, and asks the
kernel (Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`) to kill it when its
parent dies, even when the parent is killed with SIGKILL and has no chance
to clean up. SIGINT and SIGTERM reach us as exceptions (see
`terminate_as_interrupt`); `run_child` kills the group before re-raising.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends, so
children are started and waited for on the same thread.

A child Python (`module_command`) is `python -m MODULE` from a checkout or a
venv; in a PyInstaller bundle `sys.executable` is the `npu-studio` launcher
itself and there is no interpreter on the machine, so the launcher takes
`--run-module MODULE ...` instead (handled in cli.main).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1
RUN_MODULE_FLAG = "--run-module"


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def module_command(module: str) -> list[str]:
    """argv that runs `module` as __main__ in a new process."""
    if is_frozen():
        return [sys.executable, RUN_MODULE_FLAG, module]
    return [sys.executable, "-m", module]


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()  # resolved before any fork: the child must not load libraries


def _die_with_parent(parent: int):
    def setup() -> None:  # runs in the child between fork and exec
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return setup


def die_with_parent(parent: int) -> None:
    """In a child started some other way (a multiprocessing worker): die when `parent` does."""
    _die_with_parent(parent)()


def start_child(cmd: list[str], **kwargs) -> subprocess.Popen:
    """Popen in a new process group that dies with this process."""
    return subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent(os.getpid()), **kwargs)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (the child and whatever it started)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: subprocess.Popen) -> None:
    """Kill the child's group and reap the child."""
    kill_group(proc)
    proc.wait()


def run_child(cmd: list[str], *, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run to completion capturing text output; any exception on our side (Ctrl+C, timeout) kills the child."""
    proc = start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        stop(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl+C so every `finally` and child cleanup runs."""


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise `Terminated` in the main thread (CLI only)."""

    def handler(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)
