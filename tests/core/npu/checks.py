"""Invariants every NPU program must satisfy (shared by the tests)."""

from __future__ import annotations

import math

from npu_studio.core.npu.plan.memory_plan import overlaps


def check_tiles_fit(p):
    bufs = {b.id: b for b in p.buffers}
    for d in p.dispatches:
        if not d.legal or d.unit == "dma":
            continue
        slots = [b for b in p.buffers if b.id.startswith(f"s{d.index}.")]
        assert slots, f"dispatch {d.index} has no SRAM buffers"
        assert sum(b.size for b in slots) == d.sram_bytes <= p.target.sram_bytes
        assert len(slots) % 2 == 0  # two slots per operand: double buffering
    for t in p.tasks:
        for s in t.steps:
            if s.kind == "dma_in":
                assert s.bytes <= bufs[s.dsts[0]].size, (t.id, s)
            if s.kind == "dma_out":
                assert s.bytes <= bufs[s.srcs[0]].size, (t.id, s)


def check_coverage(p):
    """Tiles of each dispatch partition its iteration space exactly once."""
    for d in p.dispatches:
        if not d.legal or d.unit == "dma":
            continue
        tiles = [(t.tile_offsets, t.tile_sizes) for t in p.tasks_of(d.index)]
        assert len(tiles) == d.num_tiles
        assert len({o for o, _ in tiles}) == len(tiles), "two tiles at the same offset"
        axes = []
        for i, extent in enumerate(d.loop_ranges):
            ivs = sorted({(o[i], s[i]) for o, s in tiles})
            pos = 0
            for off, size in ivs:
                assert off == pos and size > 0, (d.index, i, ivs)
                pos += size
            assert pos == extent, (d.index, i, pos, extent)
            axes.append(len(ivs))
        assert len(tiles) == math.prod(axes)
        assert sum(math.prod(s) for _, s in tiles) == math.prod(d.loop_ranges)


def check_dag(p):
    ids = [t.id for t in p.tasks]
    assert ids == list(range(len(ids)))
    anc = []
    for t in p.tasks:
        a = 0
        for x in t.deps:
            assert 0 <= x < t.id, f"task {t.id} depends on later/missing task {x}"
            a |= anc[x] | (1 << x)
        anc.append(a)
    for d in p.dispatches:
        mine = p.tasks_of(d.index)
        assert mine, f"dispatch {d.index} has no task"
        for prod in d.deps:
            theirs = p.tasks_of(prod)
            need = sum(1 << t.id for t in theirs)
            for t in mine:
                assert anc[t.id] & need == need, f"task {t.id} (#{d.index}) not after all of #{prod}"


def check_memory(p):
    for place, cap in (("sram", p.target.sram_bytes), ("dram", None)):
        bufs = [b for b in p.buffers if b.placement == place]
        for b in bufs:
            assert b.offset >= 0 and b.live[0] < b.live[1]
            if cap is not None:
                assert b.offset + b.size <= cap
        key = [(b.offset, b.size, b.live[0], b.live[1], b.id) for b in bufs]
        key.sort()
        for i, x in enumerate(key):
            for y in key[i + 1:]:
                if y[0] >= x[0] + x[1]:
                    break
                assert not overlaps(x[:4], y[:4]), f"{x[4]} and {y[4]} overlap while both live"
    assert p.sram_peak <= p.target.sram_bytes


def check_transfers(p):
    """A DMA dispatch is one DRAM-to-DRAM copy; every fallback names a rule."""
    bufs = {b.id: b for b in p.buffers}
    for d in p.dispatches:
        if not d.legal:
            assert d.rule and d.reason and d.unit == "cpu", d
            continue
        if d.unit != "dma":
            continue
        (t,) = p.tasks_of(d.index)
        (s,) = t.steps
        assert t.op == "npu.transfer" and not t.fallback and s.kind == "dma_copy" and s.bytes > 0
        assert all(bufs[b].placement == "dram" for b in s.srcs + s.dsts)


def check_all(p):
    check_transfers(p)
    check_tiles_fit(p)
    check_coverage(p)
    check_dag(p)
    check_memory(p)
