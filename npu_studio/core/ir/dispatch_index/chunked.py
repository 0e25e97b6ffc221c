"""A PhaseIndex as a stream of short pickles, read back a few hundred records at a time.

One `pickle.loads` of a large index is one C call that holds the GIL all along (3 s for a
1,000,000-line snapshot's 42,920 dispatches), and a GUI thread waiting for the GIL stalls as long.
Here the index without its records is pickled first, with the number of records, then the records
in chunks of `CHUNK`: each load is short (milliseconds) and other threads run between two loads.
The dispatch-index child process (child.py) hands its index to the app in this form, and the
index cache (core/workspace/index_cache.py) keeps its entries in it.

Unpickling runs code: decode only what this program wrote (our child's output, the private cache).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from typing import BinaryIO, Iterator, NamedTuple

from .records import DispatchRecord, PhaseIndex

CHUNK = 256  # records per pickle: about 20 ms to load on a loaded machine (70 µs a record)
_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Encoded(NamedTuple):
    """An index with its chunked form at hand (what the child sent): stored as it is, not pickled again."""

    index: PhaseIndex
    blob: bytes


def pieces(index: PhaseIndex) -> Iterator[bytes]:
    """The stream, one short pickle after another: the header (record count, index without records), then the chunks."""
    records = index.dispatches
    yield pickle.dumps((len(records), dataclasses.replace(index, dispatches=[])), protocol=_PROTOCOL)
    for start in range(0, len(records), CHUNK):
        yield pickle.dumps(records[start:start + CHUNK], protocol=_PROTOCOL)


def encode(index: PhaseIndex) -> bytes:
    return b"".join(pieces(index))


def write(index: PhaseIndex, out: BinaryIO) -> None:
    for piece in pieces(index):
        out.write(piece)


def decode(blob: bytes) -> PhaseIndex:
    """The index in `blob`, loaded a chunk at a time. ValueError when `blob` is not one whole stream
    (truncated, corrupt, another format): a caller rebuilds the index then."""
    stream = io.BytesIO(blob)
    try:
        count, index = pickle.load(stream)
        if not isinstance(index, PhaseIndex) or not isinstance(count, int) or index.dispatches:
            raise ValueError("no index header")
        records: list[DispatchRecord] = []
        while len(records) < count:
            chunk = pickle.load(stream)
            if not isinstance(chunk, list) or not all(isinstance(r, DispatchRecord) for r in chunk):
                raise ValueError("not a chunk of dispatch records")
            records.extend(chunk)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - EOFError, UnpicklingError, a class gone from this version...
        raise ValueError(f"not a dispatch index stream: {type(exc).__name__}: {exc}") from None
    if len(records) != count or stream.read(1):
        raise ValueError("not a dispatch index stream: wrong number of records or bytes after the end")
    index.dispatches = records
    return index
