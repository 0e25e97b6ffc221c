"""The toy NPU: a deliberately different backend, written only against NPU Studio's public backend API.

- target keys: `[toy] max_channels`, `cycles_per_mac`;
- rules: the generic NPU's (reached through the registry, as any plugin would) plus two of
  its own: no depthwise or grouped convolutions, and at most `toy.max_channels` input
  channels and filters in a convolution;
- cost: a MAC array without pipelining (`cycles_per_mac` per MAC per processing element,
  plus a fixed 16-cycle start), a vector unit of one pass per function;
- ISA: one `TILE` instruction per task: a 20-byte header and the tile's offsets and sizes;
- runner: decodes its binary and computes the tiles it finds there, in that order,
  counting its own cycles with its cost model.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

from npu_studio.core.npu.backend import registry
from npu_studio.core.npu.backend.api import (Backend, DispatchCall, Emitted, EmittedLine, RunResult,
                                             TileRegion)
from npu_studio.core.npu.backend.rules import RuleSet
from npu_studio.core.npu.target.target import TargetKey

NAME = "toy"
VERSION = "0.3.0"
MAGIC = b"TOY1"
_HEADER = struct.Struct("<4sI")  # magic, instruction count
_INSN = struct.Struct("<HHIIII")  # opcode, rank, dispatch, task, compute cycles, reserved
OP_TILE, OP_MOVE = 1, 2
MAC_KINDS = ("conv", "depthwise_conv", "matmul", "batch_matmul")

TARGET_KEYS = (
    TargetKey("toy.max_channels", int, False, 64, lambda v: 1 <= v <= 65536, "an integer from 1 to 65,536"),
    TargetKey("toy.cycles_per_mac", int, False, 2, lambda v: 1 <= v <= 64, "an integer from 1 to 64"),
)

OWN_RULES = RuleSet()


@OWN_RULES.rule("toy-depthwise", "depthwise convolution not supported", units=("mac",))
def _no_depthwise(plan, target) -> str | None:
    """The toy MAC array has no depthwise or grouped convolution."""
    groups = (plan.desc.dims.get("G") or 1) if plan.desc is not None else 1
    if plan.kind == "depthwise_conv" or plan.grouped or groups > 1:
        return f"{plan.kind}, {groups} groups"
    return None


@OWN_RULES.rule("toy-channels", "too many channels for the toy NPU", units=("mac",))
def _max_channels(plan, target) -> str | None:
    """A convolution has at most `toy.max_channels` input channels (C) and filters (F)."""
    if plan.kind != "conv" or plan.desc is None:
        return None
    limit = target.backend_value("toy.max_channels")
    for dim in ("C", "F"):
        size = plan.desc.dims.get(dim)
        if size is not None and size > limit:
            return f"{dim} = {size} > toy.max_channels = {limit}"
    return None


def tile_cycles(target, kind, loop_dims, reductions, sizes, vector_cost, dtype="") -> int:
    """Compute cycles of one tile: MACs over the array at `cycles_per_mac`, or one vector pass per function."""
    work = math.prod(sizes)
    if kind in MAC_KINDS:
        pes = target.mac_rows * target.mac_cols
        return 16 + -(-work * target.backend_value("toy.cycles_per_mac") // pes)
    return 16 + -(-work * max(vector_cost, 1) // target.vector_lanes)


def _tile_cycles_of(program, dispatch, sizes) -> int:
    info = program.dispatches[dispatch]
    reds = tuple(it == "reduction" for it in info.iterator_types)
    return tile_cycles(program.target, info.kind, info.loop_dims, reds, sizes, info.vector_cost, info.dtype)


def emit(program) -> Emitted:
    """One instruction per task: TILE (a tiled compute task) or MOVE (a whole-dispatch transfer)."""
    text, lines, chunks = [], [], []
    offset = _HEADER.size
    legal = {d.index for d in program.dispatches if d.legal}
    for t in program.tasks:
        if t.dispatch not in legal:
            continue
        if t.tile_sizes:
            cycles = _tile_cycles_of(program, t.dispatch, t.tile_sizes)
            head = _INSN.pack(OP_TILE, len(t.tile_sizes), t.dispatch, t.id, cycles, 0)
            body = struct.pack(f"<{2 * len(t.tile_sizes)}q", *t.tile_offsets, *t.tile_sizes)
            text.append(f"TILE d{t.dispatch} t{t.id} at {list(t.tile_offsets)} size {list(t.tile_sizes)}"
                        f"  ; {cycles} cycles")
        else:
            moved = sum(s.bytes for s in t.steps)
            cycles = 16 + -(-moved // program.target.dram_bytes_per_cycle)
            head, body = _INSN.pack(OP_MOVE, 0, t.dispatch, t.id, cycles, 0), b""
            text.append(f"MOVE d{t.dispatch} t{t.id} {moved} bytes  ; {cycles} cycles")
        chunks.append(head + body)
        lines.append(EmittedLine(len(text), t.dispatch, t.id, offset, len(head) + len(body)))
        offset += len(head) + len(body)
    binary = _HEADER.pack(MAGIC, len(chunks)) + b"".join(chunks)
    return Emitted("\n".join(text) + "\n", binary, tuple(lines))


def decode(binary: bytes):
    """(opcode, dispatch, task, cycles, offsets, sizes) of every instruction; ValueError when malformed."""
    if len(binary) < _HEADER.size:
        raise ValueError("toy binary shorter than its header")
    magic, count = _HEADER.unpack_from(binary)
    if magic != MAGIC:
        raise ValueError(f"not a toy binary (magic {magic!r})")
    pos, out = _HEADER.size, []
    for _ in range(count):
        if pos + _INSN.size > len(binary):
            raise ValueError(f"toy binary truncated at byte {pos}")
        op, rank, dispatch, task, cycles, _ = _INSN.unpack_from(binary, pos)
        pos += _INSN.size
        if pos + 16 * rank > len(binary):
            raise ValueError(f"toy binary truncated at byte {pos}")
        values = struct.unpack_from(f"<{2 * rank}q", binary, pos)
        pos += 16 * rank
        out.append((op, dispatch, task, cycles, tuple(values[:rank]), tuple(values[rank:])))
    return out


class ToyRunner:
    """Executes a dispatch from the binary: its TILE instructions, in binary order."""

    def __init__(self):
        self._decoded: dict[int, list] = {}  # id(binary) -> instructions (one binary per program)

    def run(self, call: DispatchCall) -> RunResult:
        if call.binary is None:
            raise ValueError("the toy runner needs the toy binary")
        key = id(call.binary)
        if key not in self._decoded:
            self._decoded = {key: decode(call.binary)}
        mine = [i for i in self._decoded[key] if i[1] == call.dispatch]
        if not mine:
            raise ValueError(f"dispatch #{call.dispatch} has no instructions in the toy binary")
        cycles = sum(i[3] for i in mine)
        if not call.tiled:
            call.compute(None)
            return RunResult(tiles=len(mine), cycles=cycles, note="toy MOVE")
        tiles = [TileRegion(off, size) for op, _, _, _, off, size in mine if op == OP_TILE]
        call.compute(tiles)
        return RunResult(tiles=len(tiles), cycles=cycles)


def make_backend() -> Backend:
    generic = registry.load("generic")
    return Backend(
        name=NAME, version=VERSION, default_target=Path(__file__).with_name("toy.toml"),
        description="a test NPU: no depthwise convolution, at most toy.max_channels channels",
        target_keys=TARGET_KEYS, rules=generic.rules.extended(OWN_RULES),
        tile_cycles=tile_cycles, emit=emit, runner=ToyRunner())
