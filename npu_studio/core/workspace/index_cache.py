"""Dispatch indexes kept between sessions, so that reopening a workspace does not index it again.

Keyed by the snapshot's content (SHA-256 of its bytes, its phase and the index format), never by
path or time: an edited or recompiled snapshot has another key. The cache lives in the user's own
cache folder, beside the workspaces (never inside a workspace, which may come from someone else:
its files are data, not code to unpickle). A missing, unreadable or outdated entry is rebuilt;
a cache that cannot be written only costs the next reopen its time.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Callable

from ..errors import StudioError
from ..ir.dispatch_index import PhaseIndex
from ..ir.dispatch_index.records import SCHEMA_VERSION
from ..paths import dispatch_index_cache_dir
from ..textio import read_bytes, write_bytes_atomic

FORMAT = 2  # bump with any change to PhaseIndex or DispatchRecord


def cache_key(data: bytes, phase: str) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{SCHEMA_VERSION}\0{phase}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def cached_index(path: Path, phase: str, build: Callable[[Path, str], PhaseIndex]) -> PhaseIndex:
    """The index of the snapshot at `path`: from the cache when its content was indexed before,
    else `build(path, phase)` (whose errors reach the caller), then kept for next time."""
    path = Path(path)
    data = read_bytes(path)  # BadFile naming it: missing, a folder, unreadable
    entry = dispatch_index_cache_dir() / f"{cache_key(data, phase)}.pickle"
    try:
        index = pickle.loads(entry.read_bytes())
        if isinstance(index, PhaseIndex) and index.phase == phase:
            index.path = str(path)  # the same text may sit in another workspace
            return index
    except Exception:  # noqa: BLE001 - missing, truncated, from another version: rebuilt below
        pass
    index = build(path, phase)
    _store(entry, pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
    return index


def _store(entry: Path, blob: bytes) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(entry, blob)
    except (OSError, StudioError):  # a cache we cannot write only costs the next reopen its time
        pass
