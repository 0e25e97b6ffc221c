"""Child processes that never outlive us.

Each child (iree-compile, the runtime runner) starts in its own process
group, so one `killpg` stops it and anything it spawned, and asks the
kernel (Linux `PR_SET_PDEATHSIG`, set by util-linux `setpriv`) to kill it when its
parent dies, even when the parent is killed with SIGKILL and has no chance
to clean up. SIGINT and SIGTERM reach us as exceptions (see
`SignalWatchdog`); `run_child` kills the group before re-raising.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends, so
children are started and waited for on the same thread.

A child Python (`module_command`) is `python -m MODULE` from a checkout or a
venv; in a PyInstaller bundle `sys.executable` is the `npu-studio` launcher
itself and there is no interpreter on the machine, so the launcher takes
`--run-module MODULE ...` instead (handled in cli.main).

Every child is logged (logger `npu_studio.core.processes`), as IREE's own
Python tools do: at INFO the command line the caller gave, shell-quoted, so
that it can be pasted into a shell (not our setpriv wrapper around it); at
DEBUG how it ended and after how long; at WARNING when we kill it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

from .errors import StudioError

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
FAULT_ENV = "NPU_STUDIO_FAULT"  # tests: the name of a fault_point at which this process is killed
RUN_MODULE_FLAG = "--run-module"


def fault_point(name: str) -> None:
    """A place where a crash must leave the previous state (tests kill the process here with
    SIGKILL by setting $NPU_STUDIO_FAULT to `name`; otherwise nothing happens)."""
    if os.environ.get(FAULT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


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


# util-linux's setpriv sets the death signal in the child instead of a Python preexec_fn, which
# can deadlock when the fork happens while other threads hold locks (the app starts children
# from worker threads). The shell after it closes the race where we die before the signal is set.
_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin") if sys.platform.startswith("linux") else None
_CHECK_PARENT = 'test "$PPID" = "$0" || exit 1; exec "$@"'


def start_child(cmd: list[str], *, log_level: int = logging.INFO, **kwargs) -> subprocess.Popen:
    """Popen in a new process group that dies with this process. The command is logged at `log_level`
    (DEBUG for helpers the user did not ask for, such as the IR view's type parse)."""
    if logger.isEnabledFor(log_level):
        logger.log(log_level, "Invoking %s", describe_command(cmd, cwd=kwargs.get("cwd"), env=kwargs.get("env")))
    if _SETPRIV is None or "executable" in kwargs:
        return _LoggedPopen(cmd, program=cmd[0], start_new_session=True, preexec_fn=_die_with_parent(os.getpid()),
                            **kwargs)
    _check_runnable(cmd[0], kwargs.get("cwd"), kwargs.get("env"))
    wrapped = [_SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _CHECK_PARENT, str(os.getpid()),
               *map(os.fspath, cmd)]
    return _LoggedPopen(wrapped, program=cmd[0], start_new_session=True, **kwargs)


def describe_command(cmd: list, *, cwd=None, env: dict | None = None) -> str:
    """`cmd` as a shell takes it: the variables `env` adds or changes, then the program and its
    arguments, each shell-quoted; the working directory last when it is not ours."""
    assignments = [f"{name}={shlex.quote(value)}" for name, value in (env or {}).items()
                   if os.environ.get(name) != value]
    text = " ".join([*assignments, shlex.join(map(os.fspath, cmd))])
    if cwd is not None and os.path.abspath(cwd) != os.getcwd():
        text += f" (in {os.fspath(cwd)})"
    return text


class _LoggedPopen(subprocess.Popen):
    """A Popen that knows the program it was asked for and logs how it ended.

    Popen sets `returncode` when it reaps the child, whichever of wait(), poll() or
    communicate() (in whichever thread) did it: the one place that sees every ending."""

    def __init__(self, args, *, program, **kwargs):
        self.program = os.path.basename(os.fspath(program))
        self.started = time.monotonic()
        self.kill_logged = False
        self._returncode = None
        super().__init__(args, **kwargs)

    @property
    def returncode(self):
        return self._returncode

    @returncode.setter
    def returncode(self, value) -> None:
        if value is not None and self._returncode is None:
            how = f"with {value}" if value >= 0 else f"by signal {-value}"
            logger.debug("%s (pid %s) ended %s after %.2f s", self.program, getattr(self, "pid", "?"), how,
                         self.seconds())
        self._returncode = value

    def seconds(self) -> float:
        return time.monotonic() - self.started


def _check_runnable(program, cwd, env) -> None:
    """Raise as Popen would for a program that cannot start: the shell would only exit 127."""
    program = os.fspath(program)
    if os.sep in program:
        path = os.path.join(cwd, program) if cwd is not None else program
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(program, path=(env if env is not None else os.environ).get("PATH")) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def kill_group(proc: subprocess.Popen, why: str = "") -> None:
    """SIGKILL the child's process group (the child and whatever it started)."""
    if isinstance(proc, _LoggedPopen) and proc.returncode is None and not proc.kill_logged:
        proc.kill_logged = True  # cancel() and the thread that waits may both kill it: one warning
        logger.warning("Killing %s (pid %d) after %.1f s%s", proc.program, proc.pid, proc.seconds(),
                       f": {why}" if why else "")
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: subprocess.Popen, why: str = "") -> None:
    """Kill the child's group and reap the child."""
    kill_group(proc, why)
    proc.wait()


class Overdue(subprocess.TimeoutExpired):
    """A child stopped by its `watch` (see run_child): `why` is the one line saying what overran."""

    def __init__(self, cmd, timeout: float, why: str):
        super().__init__(cmd, timeout)
        self.why = why

    def __str__(self) -> str:
        return self.why


def run_child(cmd: list[str], *, timeout: float | None = None, env: dict | None = None, watch=None,
              poll: float = 0.25, log_level: int = logging.INFO) -> subprocess.CompletedProcess:
    """Run to completion capturing text output; any exception on our side (Ctrl+C, timeout) kills the child.

    `watch()`, when given, is asked every `poll` seconds while the child runs; a line it returns
    stops the child and raises `Overdue` with that line (a stage of the child's work overran)."""
    proc = start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       log_level=log_level)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            step = left if watch is None else (poll if left is None else min(poll, left))
            try:
                out, err = proc.communicate(timeout=step)  # retrying after TimeoutExpired loses no output
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                why = watch()
                if why:
                    raise Overdue(cmd, timeout or 0.0, why) from None
    except BaseException as exc:
        stop(proc, str(exc) if isinstance(exc, Overdue) else f"no end within {timeout:g} s"
             if isinstance(exc, subprocess.TimeoutExpired) else type(exc).__name__)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl+C so every `finally` and child cleanup runs."""


class SignalWatchdog:
    """SIGINT and SIGTERM end the process within `grace` seconds, even inside native code.

    Python acts on a signal only between bytecodes, and a native call that keeps the GIL (an
    MLIR parse, the ONNX checker) holds off both Ctrl+C and any thread of ours until it
    returns. The C-level handler still writes the signal's number to the wakeup fd at once,
    so a forked watcher process (no GIL of ours to wait for) reads it, gives our Python
    handler `grace` seconds to acknowledge (it raises KeyboardInterrupt or `Terminated`, and
    the usual cleanup runs), and otherwise prints the one line and SIGKILLs us. Children die
    with us (PR_SET_PDEATHSIG), the workspace lock with the process; a staging folder left
    behind is recovered when the workspace is next opened. Main thread only.
    """

    def __init__(self, line_for, grace: float = 1.0):
        self.line_for, self.grace = line_for, grace  # line_for(signum) -> the line to print

    def __enter__(self) -> "SignalWatchdog":
        self._signals = os.pipe()
        self._acks = os.pipe()
        os.set_blocking(self._signals[1], False)
        lines = {signal.SIGINT: self.line_for(signal.SIGINT), signal.SIGTERM: self.line_for(signal.SIGTERM)}
        parent = os.getpid()
        self._pid = os.fork()
        if self._pid == 0:  # the watcher: plain system calls only
            try:
                os.close(self._signals[1])
                os.close(self._acks[1])
                _watch(self._signals[0], self._acks[0], parent, self.grace, lines)
            finally:
                os._exit(0)
        os.close(self._signals[0])
        os.close(self._acks[0])
        self._old = {signal.SIGTERM: signal.getsignal(signal.SIGTERM), signal.SIGINT: signal.getsignal(signal.SIGINT)}
        signal.signal(signal.SIGTERM, self._raise(Terminated))
        if self._old[signal.SIGINT] is signal.default_int_handler:  # not when the caller ignores Ctrl+C
            signal.signal(signal.SIGINT, self._raise(KeyboardInterrupt))
        self._old_fd = signal.set_wakeup_fd(self._signals[1], warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc) -> None:
        signal.set_wakeup_fd(self._old_fd)
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        os.close(self._signals[1])  # the watcher reads end-of-file and exits
        os.close(self._acks[1])
        os.waitpid(self._pid, 0)

    def _raise(self, exception):
        def handler(signum, frame):
            try:
                os.write(self._acks[1], b"!")
            except OSError:
                pass
            raise exception()
        return handler


def _watch(signals: int, acks: int, parent: int, grace: float, lines: dict) -> None:
    import select
    import time

    seen = acked = 0
    deadline, last = None, None
    while True:
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0)
        ready, _, _ = select.select([signals, acks], [], [], timeout)
        if signals in ready:
            data = os.read(signals, 64)
            if not data:
                return
            caught = [b for b in data if b in lines]
            if caught:
                seen += len(caught)
                last = caught[-1]
                deadline = deadline or time.monotonic() + grace
        if acks in ready:
            data = os.read(acks, 64)
            if not data:
                return
            acked += len(data)
            if acked >= seen:
                deadline = None
        if deadline is not None and time.monotonic() >= deadline:
            os.write(2, (lines[last] + "\n").encode())
            os.kill(parent, signal.SIGKILL)
            return


CC_ENV = "CC"


class CompilerMissing(StudioError):
    """No C compiler to build the NPU plugin or the simulator's loop with."""


def find_cc() -> str:
    """The system C compiler ($CC, else cc, gcc or clang on PATH); CompilerMissing names what to install."""
    for name in filter(None, (os.environ.get(CC_ENV), "cc", "gcc", "clang")):
        found = shutil.which(name)
        if found:
            return found
    raise CompilerMissing(None, "no C compiler to build the NPU plugin: install one (e.g. apt install gcc) "
                                "or set $CC")
