"""Workspace trust: a workspace someone sent you opens restricted; running what it holds asks first.

Like VS Code's Workspace Trust. Reading, indexing, diffing and the NPU plan work in any workspace.
Anything that executes what a workspace holds (its modules' native code, a build variant's recorded
compiler and flags, variant builds, traces, precision runs, compile profiles of variants) needs the
workspace to be trusted:

- created by this user on this machine: `Workspace.create` records the new folder (its real path,
  device, inode and birth, see `_birth`) in the user's own config, never in the workspace, which
  could claim anything about itself;
- trusted by the user: a decision kept in the same file (the app's dialog, `grant`), or a folder
  the user trusts with everything under it (`trusted_folders`, edited by hand);
- trusted for this run: `--trust` on the command line (`trust_this_run`).

Anything else raises `UntrustedWorkspace`, one line naming what would run. The record is
`<config>/workspace-trust.json`; a damaged record trusts nothing more than a missing one.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import json
import os
import struct
import time
from pathlib import Path

from ..errors import StudioError, WorkspaceError
from ..paths import config_dir
from ..textio import write_text_atomic

TRUST_FILE = "workspace-trust.json"
MANIFEST = "manifest.json"  # what makes a folder a workspace (manifest.py; not imported: it loads jsonschema)
MAX_RECORDS = 5000  # created workspaces remembered; the oldest whose folder is gone go first
_run_trusted = False


class UntrustedWorkspace(WorkspaceError):
    """Running something a workspace holds, in a workspace that is not trusted. `action` says what."""

    def __init__(self, root: Path, action: str):
        self.root, self.action = Path(root), action
        super().__init__(root, f"not created by you on this machine (restricted mode): {action} would run what "
                               "the workspace holds; pass --trust (or answer Trust in the app) to run it")


def trust_this_run() -> None:
    """`--trust`: every workspace this process opens is trusted, until it exits; nothing is recorded."""
    global _run_trusted
    _run_trusted = True


def record_created(root: Path) -> None:
    """Remember that this install made the workspace at `root` (call right after making it)."""
    key = _key(root)
    if key is None:
        return

    def change(data: dict) -> None:
        created = [e for e in data["created"] if not _same(e, key)]
        created.append({**key, "time": time.time()})
        if len(created) > MAX_RECORDS:
            gone = [e for e in created if not os.path.isdir(e["path"])]
            keep = [e for e in created if e not in gone[: len(created) - MAX_RECORDS]]
            created = keep[-MAX_RECORDS:]
        data["created"] = created

    _update(change)


def grant(root: Path) -> None:
    """The user trusts the workspace at `root`: kept in the user's config for later runs."""
    key = _key(root)
    if key is None:
        return

    def change(data: dict) -> None:
        data["trusted"] = [e for e in data["trusted"] if not _same(e, key)] + [{**key, "time": time.time()}]

    _update(change)


def is_trusted(root: Path) -> bool:
    if _run_trusted:
        return True
    key = _key(root)
    if key is None:
        return False
    data = _load()
    real = Path(key["path"])
    if any(_inside_folder(real, folder) for folder in data["trusted_folders"]):
        return True
    return any(_same(e, key) for e in data["created"] + data["trusted"])


def require(root: Path, action: str) -> None:
    """Raise UntrustedWorkspace unless the workspace at `root` is trusted; `action` names what would run."""
    if not is_trusted(root):
        raise UntrustedWorkspace(Path(root), action)


def require_for_path(path: Path, action: str) -> None:
    """`require` for the workspace `path` lies in (a module, a snapshot), if it lies in one."""
    root = workspace_of(path)
    if root is not None:
        require(root, action)


def workspace_of(path: Path) -> Path | None:
    """The workspace folder holding `path` (the nearest folder above it with a manifest), or None."""
    try:
        current = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    for folder in (current, *current.parents):
        if (folder / MANIFEST).is_file():
            return folder
    return None


# -- the record ---------------------------------------------------------------


def _key(root: Path) -> dict | None:
    try:
        real = os.path.realpath(root)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return {"path": real, "dev": st.st_dev, "ino": st.st_ino, "born": _birth(real)}


def _birth(real: str) -> str | None:
    """What tells this folder from a later one at the same path with the same inode number.

    Path, device and inode are not enough: ext4 hands a freed inode to the next folder made, so
    `rm -rf ws; cp -a received ws` gets the trusted folder's very inode. The folder's birth time
    (statx's btime, in ns) is set by the kernel when the folder is made and no user can change it
    (utime sets only atime and mtime; `cp -a` and tar preserve mtime, never btime), so a folder
    made later differs. A file system without birth times (statx does not report STATX_BTIME)
    falls back to the inode's generation number (FS_IOC_GETVERSION), which the file system
    draws afresh, at random on ext4, each time it reuses an inode. With neither, None: such a
    folder is keyed by path, device and inode alone.
    """
    try:
        buf = ctypes.create_string_buffer(_STATX_SIZE)
        if _libc().statx(_AT_FDCWD, os.fsencode(real), 0, _STATX_BTIME, buf) == 0:
            mask, = struct.unpack_from("<I", buf, 0)
            if mask & _STATX_BTIME:
                seconds, nanos = struct.unpack_from("<qI", buf, _STATX_BTIME_OFFSET)
                return f"btime:{seconds * 1_000_000_000 + nanos}"
    except (AttributeError, OSError, TypeError, ValueError):  # no statx in this C library
        pass
    try:
        fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC)
        try:
            generation, = struct.unpack("l", fcntl.ioctl(fd, _FS_IOC_GETVERSION, bytes(8)))
        finally:
            os.close(fd)
        return f"generation:{generation}"
    except (OSError, ValueError, struct.error):
        return None


_AT_FDCWD, _STATX_BTIME = -100, 0x800  # <fcntl.h>, <linux/stat.h>
_STATX_SIZE, _STATX_BTIME_OFFSET = 256, 80  # struct statx: 256 bytes, stx_btime after atime at 64
_FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long), <linux/fs.h>


@functools.cache
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _same(entry, key: dict) -> bool:
    """A record made before births were kept has no "born": it matches nothing (asked again once)."""
    return (isinstance(entry, dict) and all(entry.get(k) == key[k] for k in ("path", "dev", "ino"))
            and "born" in entry and entry["born"] == key["born"])


def _inside_folder(real: Path, folder) -> bool:
    if not isinstance(folder, str) or not os.path.isabs(folder):
        return False
    return real.is_relative_to(Path(os.path.realpath(folder)))


def _empty() -> dict:
    return {"version": 1, "created": [], "trusted": [], "trusted_folders": []}


def _load() -> dict:
    data = _empty()
    try:
        loaded = json.loads((config_dir() / TRUST_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return data
    if isinstance(loaded, dict):
        for name in ("created", "trusted", "trusted_folders"):
            if isinstance(loaded.get(name), list):
                data[name] = loaded[name]
    return data


def _update(change) -> None:
    """Read, change and write the record under a lock, so two processes never drop each other's entries.
    A config folder we cannot write only costs the user a question later."""
    folder = config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / (TRUST_FILE + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = _load()
            change(data)
            write_text_atomic(folder / TRUST_FILE, json.dumps(data, indent=1))
    except (OSError, StudioError):  # the atomic writer names its file in a StudioError
        pass
