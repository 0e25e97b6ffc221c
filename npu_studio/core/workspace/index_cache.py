"""Dispatch indexes kept between sessions, so that reopening a workspace does not index it again.

Keyed by the snapshot's content (SHA-256 of its bytes, its phase and the index format), never by
path or time: an edited or recompiled snapshot has another key. Entries are the index in its
chunked form (core/ir/dispatch_index/chunked.py: short pickles read back a few hundred records per
load, so that no load holds the GIL long enough to stall the GUI thread; a large snapshot's child
process sends that form, and it is stored as sent). Unpickling
runs code, so entries are read only from a folder nobody else can write: the user's own cache folder
(never a workspace, which may come from someone else, nor beside $NPU_STUDIO_HOME, which may be a
shared /tmp), made with mode 0700 and checked on every use to be a real folder owned by this user
that others cannot write; each entry is opened through that checked folder without following links
and must be a file owned by this user. A folder that fails the check is not used (indexes are then
built each time). A missing, unreadable or outdated entry is rebuilt; a cache that cannot be written
only costs the next reopen its time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path
from typing import Callable

from ..ir.dispatch_index import PhaseIndex
from ..ir.dispatch_index.chunked import Encoded, decode, encode
from ..ir.dispatch_index.records import SCHEMA_VERSION
from ..paths import dispatch_index_cache_dir
from ..textio import read_bytes

FORMAT = 5  # bump with any change to PhaseIndex, DispatchRecord or the chunked form
_log = logging.getLogger(__name__)


def cache_key(data: bytes, phase: str) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{SCHEMA_VERSION}\0{phase}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def cached_index(path: Path, phase: str, build: Callable[[Path, str], PhaseIndex | Encoded]) -> PhaseIndex:
    """The index of the snapshot at `path`: from the cache when its content was indexed before,
    else `build(path, phase)` (whose errors reach the caller), then kept for next time. A build
    that returns the index already `Encoded` (a child process's) has that form stored as it is."""
    path = Path(path)
    data = read_bytes(path)  # BadFile naming it: missing, a folder, unreadable
    name = f"{cache_key(data, phase)}.pickle"
    folder = _private_folder()
    try:
        blob = _read(folder, name) if folder is not None else None
        if blob is not None:
            try:
                index = decode(blob)
                if index.phase == phase:
                    index.path = str(path)  # the same text may sit in another workspace
                    return index
            except ValueError:  # truncated, corrupt, from another version: rebuilt below
                pass
        built = build(path, phase)
        index, blob = (built.index, built.blob) if isinstance(built, Encoded) else (built, None)
        if folder is not None:
            _store(folder, name, blob if blob is not None else encode(index))
        return index
    finally:
        if folder is not None:
            os.close(folder)


def _private_folder() -> int | None:
    """A descriptor of the cache folder (made 0700 if missing), or None when it is not this user's alone."""
    folder = dispatch_index_cache_dir()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:  # a link, a file, no permission: no cache
        _log.info("dispatch index cache %s not used: %s", folder, exc.strerror or exc)
        return None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        _log.warning("dispatch index cache %s not used: it is not private to this user", folder)
        return None
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o700)  # ours, writable by us alone: made private
    return fd


def _read(folder: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        return f.read()


def _store(folder: int, name: str, blob: bytes) -> None:
    tmp = f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        with open(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:  # a cache we cannot write only costs the next reopen its time
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
