"""One writer at a time: an exclusive lock on a workspace's `.lock` file.

`fcntl.flock` locks belong to the open file, so the kernel drops a lock when
its holder dies, however it dies: a stale lock of a dead process is simply
free for the next writer. Nothing is written into the file, so a command
(even one killed) leaves no trace in the workspace: the holder's pid, named in
the error a second writer gets, comes from the kernel's table of locks.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from ..errors import WorkspaceBusy, WorkspaceError, os_error

LOCK_NAME = ".lock"


class WorkspaceLock:
    """`with WorkspaceLock(root):` holds the workspace for writing; `wait` seconds before giving up."""

    def __init__(self, root: Path, *, wait: float = 0.0, poll: float = 0.1):
        self.root = Path(root)
        self.path = self.root / LOCK_NAME
        self.wait, self.poll = wait, poll
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "WorkspaceLock":
        if self._fd is not None:
            return self
        try:
            # O_NOFOLLOW: a .lock that is a symbolic link (a sent workspace) would create or open a file elsewhere
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WorkspaceError(self.path, "is a symbolic link; refusing to follow it to lock the workspace") from None
            raise os_error(self.root, exc, "cannot lock workspace") from None
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_pid(fd)
                    os.close(fd)
                    who = f"process {holder}" if holder else "another process"
                    raise WorkspaceBusy(self.root, f"workspace is being written by {who} "
                                                   "(a compile or resume); try again when it has finished") from None
                time.sleep(self.poll)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __del__(self) -> None:  # a holder dropped without release() must not keep the workspace
        self.release()

    def __enter__(self) -> "WorkspaceLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def holder_pid(root: Path) -> int | None:
    """The pid holding the workspace's lock, or None when nobody writes to it."""
    try:
        fd = os.open(Path(root) / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_pid(fd) or -1
    finally:
        os.close(fd)
    return None


def _read_pid(fd: int) -> int | None:
    """The pid holding a flock on `fd`'s file, from /proc/locks (None when it cannot be told)."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for line in table:
                fields = line.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after the id
                if "->" in fields:
                    continue
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode and fields[4].isdigit():
                    return int(fields[4])
    except OSError:
        pass
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_writable_folder(root: Path) -> None:
    """Refuse a workspace path that is a file or a folder we cannot write, with one line."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise WorkspaceError(root, "is a file, not a workspace folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(root, exc, "cannot create workspace folder") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise WorkspaceError(root, "workspace folder is not writable")
