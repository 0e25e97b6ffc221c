"""Tasks of the NPU program and the dependencies between them.

One task per tile of a legal dispatch (steps: DMA-in of every input
tile, compute, DMA-out once the tile's reduction is complete), one
`npu.fallback` task per CPU dispatch, one `npu.transfer` task per
data-movement dispatch (a DRAM-to-DRAM DMA copy, see transfers.py). Tiles alternate between two SRAM
slots per operand (double buffering): tile t waits for tile t-2, which
used the same slots, not for t-1, so one tile's DMA overlaps the
previous tile's compute. Partial sums chain the reduction tiles of an
output tile. Between dispatches, a dispatch's first tasks wait for the
last tasks of every dispatch it depends on (dataflow, or memory a
dispatch reuses after another).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..program.npu_ir import TRANSFER_OP, Step, Task
from .tiling import Loop, enumerate_tiles, footprint

OP_OF_KIND = {
    "conv": "npu.conv", "depthwise_conv": "npu.depthwise_conv", "matmul": "npu.matmul",
    "batch_matmul": "npu.matmul", "pooling": "npu.pool", "reduction": "npu.reduce",
    "elementwise": "npu.eltwise", "gather": "npu.eltwise", "softmax": "npu.softmax", "copy/transpose": "npu.copy",
}


@dataclass(frozen=True)
class TiledOperand:
    """An access of a legal dispatch with its DRAM side and SRAM slots."""

    name: str
    role: str  # input | weight | output
    access: object  # tiling.Access
    dram: str | None  # DRAM buffer (None: nothing to load, e.g. a zero-filled output)
    slots: tuple[str, str]
    dtype_bytes: int  # per element in SRAM (an output: the accumulator's)
    dram_dtype_bytes: int = 0  # per element in DRAM, when it differs (f32 acc -> f16 out)


@dataclass(frozen=True)
class DispatchTiles:
    index: int
    kind: str
    loops: tuple[Loop, ...]
    sizes: tuple[int, ...]
    order: tuple[int, ...]
    operands: tuple[TiledOperand, ...]
    outputs: tuple[str, ...]  # DRAM buffers written


@dataclass(frozen=True)
class TransferDispatch:
    """A data-movement dispatch: one DMA transfer from DRAM to DRAM."""

    index: int
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    bytes_read: int
    bytes_written: int


@dataclass(frozen=True)
class FallbackDispatch:
    index: int
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    ops: int


def _tile_steps(d: DispatchTiles, sizes: tuple[int, ...], in_slot: int, out_slot: int,
                first_chunk: bool, last_chunk: bool) -> tuple[Step, ...]:
    """A tile's steps: DMA-in of every input tile (and of the output's initial
    value with the first reduction chunk), compute, DMA-out after the last chunk."""
    op_bytes = [math.prod(footprint(op.access, sizes)) * op.dtype_bytes for op in d.operands]
    steps, ins, outs = [], [], []
    for op, nbytes in zip(d.operands, op_bytes):
        if op.role == "output":
            slot = op.slots[out_slot]
            outs.append(slot)
            if first_chunk and op.dram:
                steps.append(Step("dma_in", (op.dram,), (slot,), bytes=nbytes))
        else:
            slot = op.slots[in_slot]
            ins.append(slot)
            if op.dram:
                steps.append(Step("dma_in", (op.dram,), (slot,), bytes=nbytes))
    steps.append(Step("compute", tuple(ins), tuple(outs), ops=math.prod(sizes)))
    if last_chunk:
        for op, nbytes in zip(d.operands, op_bytes):
            if op.role != "output":
                continue
            if op.dram_dtype_bytes:  # written back in its DRAM type (f32 acc -> f16)
                nbytes = nbytes // op.dtype_bytes * op.dram_dtype_bytes
            for dst in d.outputs:
                steps.append(Step("dma_out", (op.slots[out_slot],), (dst,), bytes=nbytes))
    return tuple(steps)


def tile_tasks(d: DispatchTiles, first_id: int) -> list[Task]:
    tasks: list[Task] = []
    red = [i for i, lp in enumerate(d.loops) if lp.reduction]
    par = [i for i, lp in enumerate(d.loops) if not lp.reduction]
    red_ends = [(i, d.loops[i].size) for i in red]
    op = OP_OF_KIND.get(d.kind, "npu.compute")
    out_tile = -1
    prev_par = None
    last_of_out: dict[int, int] = {}
    # Steps are immutable and depend on a handful of facts of the tile: share them.
    steps_of: dict[tuple, tuple[Step, ...]] = {}
    for t, (offs, sizes) in enumerate(enumerate_tiles(d.loops, d.sizes, d.order)):
        par_key = tuple(offs[i] for i in par)
        first_chunk = par_key != prev_par
        if first_chunk:
            out_tile += 1
            prev_par = par_key
        last_chunk = all(offs[i] + sizes[i] >= n for i, n in red_ends)
        key = (sizes, t % 2, out_tile % 2, first_chunk, last_chunk)
        steps = steps_of.get(key)
        if steps is None:
            steps = steps_of[key] = _tile_steps(d, *key)
        if t >= 2:
            if not first_chunk:  # partial sums, and the same input slots
                deps = (first_id + t - 2, first_id + t - 1)
            elif out_tile >= 2:  # the same input slots, the same output slot
                deps = tuple(sorted({first_id + t - 2, last_of_out[out_tile - 2]}))
            else:
                deps = (first_id + t - 2,)
        elif not first_chunk:
            deps = (first_id + t - 1,)
        else:
            deps = ()
        last_of_out[out_tile] = first_id + t
        tasks.append(Task(first_id + t, d.index, op, False, offs, sizes, steps, deps))
    return tasks


def build_tasks(dispatches: list, dispatch_deps: dict[int, set[int]]) -> list[Task]:
    """Tasks in program order (a topological order of the dependencies)."""
    tasks: list[Task] = []
    sinks: dict[int, list[int]] = {}
    for d in dispatches:
        first = len(tasks)
        if isinstance(d, FallbackDispatch):
            own = [Task(first, d.index, "npu.fallback", True, (), (),
                        (Step("cpu", d.reads, d.writes, ops=d.ops),), ())]
        elif isinstance(d, TransferDispatch):
            # bytes: both sides cross the DRAM port (read, then written)
            own = [Task(first, d.index, TRANSFER_OP, False, (), (),
                        (Step("dma_copy", d.reads, d.writes,
                              bytes=d.bytes_read + d.bytes_written),), ())]
        else:
            own = tile_tasks(d, first)
        external = sorted({s for p in dispatch_deps.get(d.index, ()) for s in sinks.get(p, ())})
        depended = {x for t in own for x in t.deps}
        own = [
            Task(t.id, t.dispatch, t.op, t.fallback, t.tile_offsets, t.tile_sizes, t.steps,
                 tuple(sorted(set(t.deps) | set(external))) if not t.deps else t.deps)
            for t in own
        ]
        sinks[d.index] = [t.id for t in own if t.id not in depended]
        tasks.extend(own)
    return tasks


def task_positions(counts: list[int]) -> list[tuple[int, int]]:
    """[first, last + 1) task position per dispatch, given tasks per dispatch."""
    out, pos = [], 0
    for c in counts:
        out.append((pos, pos + c))
        pos += c
    return out
