"""Interval allocation of buffers in a linear memory (SRAM or DRAM).

Each request has a size and a live range [start, end) in schedule time.
Buffers whose live ranges overlap get disjoint address ranges; a buffer
may reuse the addresses of one that is dead by the time it starts. The
allocator is best-fit over the free gaps at each buffer's start, taking
buffers by start time (largest first on ties).
"""

from __future__ import annotations

from dataclasses import dataclass

from .tiling import align


@dataclass(frozen=True)
class Request:
    id: str
    size: int
    start: int
    end: int  # exclusive


class PlanError(ValueError):
    pass


def allocate(requests: list[Request], capacity: int | None = None) -> tuple[dict[str, int], int]:
    """Offsets per request id and the peak address used (bytes).

    Raises PlanError when `capacity` is given and exceeded.
    """
    order = sorted(requests, key=lambda r: (r.start, -r.size, r.id))
    live: list[tuple[int, int, int]] = []  # (offset, size, end)
    offsets: dict[str, int] = {}
    peak = 0
    for r in order:
        if r.end <= r.start:
            raise PlanError(f"buffer {r.id}: empty live range [{r.start}, {r.end})")
        live = [x for x in live if x[2] > r.start]
        size = align(r.size)
        best = None
        cursor = 0
        for off, sz, _ in sorted(live):
            gap = off - cursor
            if gap >= size and (best is None or gap < best[1]):
                best = (cursor, gap)
            cursor = max(cursor, off + sz)
        offset = best[0] if best else cursor
        if capacity is not None and offset + size > capacity:
            raise PlanError(
                f"buffer {r.id} ({r.size} bytes) does not fit: needs up to "
                f"{offset + size} of {capacity} bytes"
            )
        live.append((offset, size, r.end))
        offsets[r.id] = offset
        peak = max(peak, offset + size)
    return offsets, peak


def overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    """Do two (offset, size, start, end) placements collide in space and time?"""
    ao, asz, as_, ae = a
    bo, bsz, bs, be = b
    return ao < bo + bsz and bo < ao + asz and as_ < be and bs < ae
