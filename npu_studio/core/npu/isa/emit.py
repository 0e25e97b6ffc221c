"""The planned NPU program as instructions of the generic NPU (docs/npu-isa.md).

Every step of every task becomes one instruction on the engine the timing simulator runs it on
(DMA loads round-robin over the load channels, stores on the last channel, compute on the MAC
array or the vector unit, fallbacks on the CPU), tagged with its dispatch and task. Each engine
runs its own instructions in order; what one engine must wait for on another becomes a
`sem.wait` on that engine's count of completed instructions:

- a task's steps run group by group (its loads, then its compute, then its stores);
- a task's first steps wait for the last steps of the tasks it depends on;
- a step touching an SRAM buffer waits for every step that touched a buffer it reuses the
  addresses of (the address reuse the memory plan allows, as the simulator orders it).

A wait the engine has already done (or one on its own queue) is not repeated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...dtypes import known, nbytes
from ...errors import StudioError
from ..program.npu_ir import Buffer, DispatchInfo, NpuProgram, Task
from ..sim.cost import MAC_KINDS, gemm_view
from ..target.target import NpuTarget
from .listing import Instruction
from .spec import ENUMS, FUNCTIONS

_DATAFLOW = {"output-stationary": "os", "weight-stationary": "ws"}
Counts = dict[str, int]  # engine -> count of its completed instructions


class EmitError(StudioError):
    """The program has something the instruction set cannot say (one line naming it)."""


@dataclass
class _State:
    done: Counts = field(default_factory=dict)  # instructions issued per engine
    waited: dict[str, Counts] = field(default_factory=dict)  # per engine: the counts it has waited for
    task_end: dict[int, Counts] = field(default_factory=dict)  # per task: where its last steps sit
    touched: dict[str, Counts] = field(default_factory=dict)  # per SRAM buffer: its steps so far
    fence: dict[str, Counts] = field(default_factory=dict)  # per SRAM buffer: the earlier users of its addresses
    loads: int = 0  # DMA loads so far (round-robin over the load channels)


def _merge(into: Counts, more: Counts) -> None:
    for engine, count in more.items():
        if count > into.get(engine, 0):
            into[engine] = count


def emit(program: NpuProgram, dispatches: set[int] | None = None,
         target: NpuTarget | None = None) -> list[Instruction]:
    """The instructions of `program` (or of the `dispatches` given, as a program of their own: their
    dependencies on other dispatches are taken as met). EmitError for a program the ISA cannot hold."""
    target = target or program.target
    infos = {d.index: d for d in program.dispatches}
    tasks = [t for t in program.tasks if dispatches is None or t.dispatch in dispatches]
    ids = {t.id for t in tasks}
    buffers = {b.id: b for b in program.buffers}
    used = {b for t in tasks for s in t.steps for b in (*s.srcs, *s.dsts)}
    missing = sorted(used - buffers.keys())
    if missing:
        raise EmitError(program.source or None, f"a step names buffer {missing[0]!r}, which the program lacks")
    out = [Instruction(".buffer", "-", None, None, (b.id, b.placement, b.kind, b.dtype, b.offset, b.size))
           for b in program.buffers if b.id in used]
    overlaps = _sram_overlaps([buffers[b] for b in used if buffers[b].placement == "sram"])
    state, current = _State(), None
    seen: set[int] = set()
    for t in tasks:
        later = [d for d in t.deps if d in ids and d not in seen]
        if later:
            raise EmitError(program.source or None, f"task {t.id} depends on task {later[0]}, which comes after it "
                                                    "(tasks must be in program order)")
        seen.add(t.id)
        info = infos.get(t.dispatch)
        if info is None:
            raise EmitError(program.source or None, f"task {t.id} belongs to dispatch {t.dispatch}, "
                                                    "which the program lacks")
        if t.dispatch != current:
            current = t.dispatch
            out.append(Instruction(".dispatch", "-", info.index, None,
                                   (info.index, info.unit, info.kind, info.symbol, info.location)))
        out += _task(t, info, target, buffers, overlaps, state, ids)
    out.append(Instruction("barrier", "-", None, None, ()))
    return out


def _sram_overlaps(sram: list[Buffer]) -> dict[str, list[str]]:
    """For each SRAM buffer, the others whose address ranges overlap it."""
    by_offset = sorted(sram, key=lambda b: b.offset)
    out: dict[str, list[str]] = {b.id: [] for b in sram}
    for i, a in enumerate(by_offset):
        for b in by_offset[i + 1:]:
            if b.offset >= a.offset + a.size:
                break
            out[a.id].append(b.id)
            out[b.id].append(a.id)
    return out


def _task(t: Task, info: DispatchInfo, target: NpuTarget, buffers: dict[str, Buffer],
          overlaps: dict[str, list[str]], state: _State, ids: set[int]) -> list[Instruction]:
    out = [Instruction(".task", "-", t.dispatch, t.id, (t.tile_offsets, t.tile_sizes, t.deps))]
    before: Counts = {}  # what the task's first steps wait for: the tasks it depends on
    for d in t.deps:
        if d in ids:
            _merge(before, state.task_end.get(d, {}))
    group: Counts = {}
    prev_kind = None
    for s in t.steps:
        if prev_kind is not None and s.kind != prev_kind:
            before, group = group, {}  # the next group waits for the whole previous one
        prev_kind = s.kind
        engine = _engine(s.kind, info, t, target, state)
        needs = dict(before)
        for b in (*s.srcs, *s.dsts):
            if b in overlaps:
                if b not in state.fence:  # first use: every earlier user of these addresses is done with them
                    state.fence[b] = {}
                    for other in overlaps[b]:
                        _merge(state.fence[b], state.touched.get(other, {}))
                _merge(needs, state.fence[b])
        waited = state.waited.setdefault(engine, {})
        for on in sorted(needs):
            if on != engine and needs[on] > waited.get(on, 0):
                out.append(Instruction("sem.wait", engine, t.dispatch, t.id, (on, needs[on])))
                waited[on] = needs[on]
        out.append(Instruction(_mnemonic(s.kind, engine), engine, t.dispatch, t.id,
                               _operands(s, t, info, target, buffers)))
        count = state.done[engine] = state.done.get(engine, 0) + 1
        group[engine] = count
        for b in (*s.srcs, *s.dsts):
            if b in overlaps:
                state.touched.setdefault(b, {})[engine] = count
    state.task_end[t.id] = group
    return out


def _engine(kind: str, info: DispatchInfo, t: Task, target: NpuTarget, state: _State) -> str:
    channels = target.dma_channels
    if kind in ("dma_in", "dma_copy"):
        state.loads += 1
        return f"dma{(state.loads - 1) % max(1, channels - 1)}"
    if kind == "dma_out":
        return f"dma{channels - 1}"
    if kind == "cpu":
        return "cpu"
    return "mac" if info.kind in MAC_KINDS and t.tile_sizes else "vec"


def _mnemonic(kind: str, engine: str) -> str:
    return {"dma_in": "dma.load", "dma_out": "dma.store", "dma_copy": "dma.copy", "cpu": "cpu.call"}.get(
        kind, "mac.tile" if engine == "mac" else "vec.op")


def _operands(s, t: Task, info: DispatchInfo, target: NpuTarget, buffers: dict[str, Buffer]) -> tuple:
    def addrs(ids) -> tuple[int, ...]:
        return tuple(buffers[b].offset for b in ids)

    if s.kind in ("dma_in", "dma_out"):
        if len(s.srcs) != 1 or len(s.dsts) != 1:
            raise EmitError(None, f"task {t.id}: a DMA {s.kind} step moves {len(s.srcs)} buffers to "
                                  f"{len(s.dsts)}; dma.load and dma.store move one to one")
        # one contiguous run, unpadded: the program records the bytes a step moves, not the operand's access map
        dst, src = buffers[s.dsts[0]], buffers[s.srcs[0]]
        if s.kind == "dma_out":
            return (dst.offset, src.offset, 1, s.bytes, s.bytes, s.bytes)
        esize = nbytes(dst.dtype) if known(dst.dtype) and nbytes(dst.dtype) in (1, 2, 4, 8) else 1
        return (dst.offset, src.offset, 1, s.bytes, s.bytes, 0, 0, 0, 0, esize, 0)
    if s.kind == "dma_copy":
        read = min(info.transfer_read, s.bytes) if info.transfer_read else s.bytes - s.bytes // 2
        mode = info.transfer if info.transfer in ENUMS["transfer"] else "copy"
        return (mode, read, s.bytes - read, info.pad_value, addrs(s.dsts), addrs(s.srcs))
    if s.kind == "cpu":
        return (t.dispatch, s.ops, addrs(s.dsts), addrs(s.srcs))
    post = _functions(info.epilogue)
    if info.kind in MAC_KINDS and t.tile_sizes:
        reds = tuple(it == "reduction" for it in info.iterator_types)
        batch, m, n, k = gemm_view(info.kind, info.loop_dims, reds, t.tile_sizes)
        first = all(o == 0 for o, r in zip(t.tile_offsets, reds) if r)
        last = all(n_ < 0 or o + z >= n_ for o, z, n_, r in zip(t.tile_offsets, t.tile_sizes, info.loop_ranges, reds)
                   if r)
        rq = info.requant[0] if info.requant else {}
        out_type = rq.get("narrow") or info.acc_dtype or info.dtype
        return (_DATAFLOW.get(target.dataflow, "os"), _etype(info.dtype, t), _etype(info.acc_dtype, t),
                target.mac_rate(info.dtype), batch, m, n, k, int(not first), int(last),
                rq.get("scale") or "none", rq.get("rounding") or "none", int(bool(rq.get("zero_point"))),
                int(bool(rq.get("clamp"))), int(bool(rq.get("bias"))), _etype(out_type, t), post,
                addrs(s.dsts), addrs(s.srcs))
    klass = info.kind if info.kind in ENUMS["vector_class"] else "other"
    return (klass, s.ops, info.vector_cost or 1, post, addrs(s.dsts), addrs(s.srcs))


def _etype(dtype: str, t: Task) -> str:
    if not dtype:
        return "none"
    if dtype not in ENUMS["etype"]:
        raise EmitError(None, f"task {t.id}: element type {dtype!r} has no code in the ISA")
    return dtype


def _functions(epilogue: str) -> tuple[str, ...]:
    """The vector functions an epilogue text names ('...; vector: sub, mul'), in the mask's bit order."""
    names = set()
    for part in epilogue.split(";"):
        part = part.strip()
        if part.startswith("vector:"):
            names |= {n.strip() for n in part[len("vector:"):].split(",")}
    return tuple(n for n in FUNCTIONS if n in names)
