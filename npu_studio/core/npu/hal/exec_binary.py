"""The program binary the plugin's C interpreter runs: the generic NPU's instructions and, per NPU
dispatch, a compute section saying what its tiles compute (docs/npu-isa.md, "Sections").

The instructions (isa.emit) give each dispatch's tasks and tiles (`.task`), buffers and
transfers; they do not say what a MAC tile's body is (a convolution's indexing maps, a fused
epilogue, a softmax). That is the dispatch's `ExecDispatch` (exec_lower), written as a compute
section: a stream of little-endian i64 words, a string or a byte blob being its length and its
bytes padded to 8. The C side (plugin_src/npu_isa_decode.c, npu_exec_section.c) reads the same
layout; `decode_section` here is the Python reader the run's checks use.
"""

from __future__ import annotations

import base64
import math
import struct
from pathlib import Path

from ...textio import read_bytes
from ..isa.encoding import BinaryError, Section, assemble, disassemble, sections
from ..isa.listing import Instruction
from ..isa.spec import SECTION_COMPUTE
from .exec_desc import ELEMENTS, FUNC_OPS, BodyOp, ExecDispatch, ExecProgram, FuncOp, Value, check

ROUNDING = ("", "half-even", "half-away", "truncate")  # a body op's `round`, by code
_WORD = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")
MAX_ITEMS = 1 << 24  # items of one list in a section (a corrupt count is refused before any allocation)


class _Writer:
    def __init__(self):
        self.parts: list[bytes] = []

    def int(self, v) -> None:
        self.parts.append(_WORD.pack(int(v)))

    def ints(self, items) -> None:
        self.int(len(items))
        for v in items:
            self.int(v)

    def blob(self, data: bytes) -> None:
        self.int(len(data))
        self.parts.append(data + bytes(-len(data) % 8))

    def text(self, s: str) -> None:
        self.blob(s.encode("utf-8"))


def encode_section(d: dict) -> bytes:
    """The compute section of one dispatch, from its `ExecDispatch` as a dict (dataclasses.asdict).
    The tiles are not in it: they are the dispatch's `.task` directives."""
    w = _Writer()
    w.text(d["symbol"])
    w.text(d["reason"])
    if d["reason"]:
        return b"".join(w.parts)
    w.int(d["bindings"])
    w.int(len(d["values"]))
    for v in d["values"]:
        w.int(ELEMENTS.index(v["element"]))
        w.ints(v["shape"])
    w.int(len(d["ops"]))
    for op in d["ops"]:
        w.int(FUNC_OPS.index(op["op"]))
        for key in ("args", "results"):
            w.ints(op[key])
        w.int(op["binding"])
        for key in ("offsets", "sizes", "strides"):
            w.ints(op[key])
        w.blob(base64.b64decode(op["data"]))
        w.int(op["splat"])
        w.int(op["n_in"])
        w.int(len(op["maps"]))
        for m in op["maps"]:
            w.int(len(m))
            for row in m:
                w.ints(row)
        w.ints(op["reduction"])
        w.ints(op["ranges"])
        w.int(len(op["body"]))
        for b in op["body"]:
            w.text(b["op"])
            w.ints(b["args"])
            w.int(ELEMENTS.index(b["type"]))
            w.int(b["attr"])
            w.parts.append(_DOUBLE.pack(float.fromhex(b["f"]) if b["f"] else 0.0))
            w.int(b["i"])
            w.int(ROUNDING.index(b["round"]))
            w.int(b["saturate"])
        w.ints(op["yields"])
        w.int(op["dim"])
    w.int(d["root"])
    w.ints(d["epilogue"])
    return b"".join(w.parts)


class _Reader:
    def __init__(self, data: bytes, base: int, path):
        self.data, self.pos, self.base, self.path = data, 0, base, path

    def fail(self, why: str):
        raise BinaryError(self.path, self.base + self.pos, why)

    def int(self, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> int:
        if self.pos + 8 > len(self.data):
            self.fail("truncated compute section")
        (v,) = _WORD.unpack_from(self.data, self.pos)
        if not lo <= v <= hi:
            self.fail(f"{v} outside {lo}..{hi}")
        self.pos += 8
        return v

    def ints(self, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> tuple[int, ...]:
        n = self.int(0, min(MAX_ITEMS, (len(self.data) - self.pos) // 8))
        return tuple(self.int(lo, hi) for _ in range(n))

    def blob(self) -> bytes:
        n = self.int(0, len(self.data) - self.pos - 8 if len(self.data) > self.pos + 8 else 0)
        out = self.data[self.pos:self.pos + n]
        self.pos += n + (-n % 8)
        if self.pos > len(self.data):
            self.fail("truncated compute section")
        return out

    def text(self) -> str:
        at, raw = self.pos, self.blob()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BinaryError(self.path, self.base + at, "a string that is not UTF-8") from None

    def double(self) -> float:
        if self.pos + 8 > len(self.data):
            self.fail("truncated compute section")
        (v,) = _DOUBLE.unpack_from(self.data, self.pos)
        self.pos += 8
        return v


def decode_section(payload: bytes, dispatch: int, tiles: list[tuple[tuple[int, ...], tuple[int, ...]]],
                   base: int = 0, path: str | Path = "<binary>") -> ExecDispatch:
    """`ExecDispatch` of a compute section (BinaryError naming the offset of a malformed word);
    `tiles` are its `.task` directives' (offsets, sizes)."""
    r = _Reader(payload, base, path)
    symbol, reason = r.text(), r.text()
    if reason:
        if r.pos != len(payload):
            r.fail("words after a reason")
        return ExecDispatch(dispatch, symbol, reason, 0)
    bindings = r.int(0, MAX_ITEMS)
    values = tuple(Value(ELEMENTS[r.int(0, len(ELEMENTS) - 1)], r.ints(0)) for _ in range(r.int(0, MAX_ITEMS)))
    ops = []
    for _ in range(r.int(0, MAX_ITEMS)):
        kind = FUNC_OPS[r.int(0, len(FUNC_OPS) - 1)]
        args, results, binding = r.ints(), r.ints(), r.int()
        offsets, sizes, strides = r.ints(), r.ints(), r.ints()
        data, splat, n_in = base64.b64encode(r.blob()).decode("ascii"), bool(r.int(0, 1)), r.int()
        maps = tuple(tuple(r.ints() for _ in range(r.int(0, MAX_ITEMS))) for _ in range(r.int(0, MAX_ITEMS)))
        reduction, ranges = tuple(bool(x) for x in r.ints(0, 1)), r.ints()
        body = []
        for _ in range(r.int(0, MAX_ITEMS)):
            name, bargs, btype = r.text(), r.ints(), ELEMENTS[r.int(0, len(ELEMENTS) - 1)]
            attr, f, i = r.int(), r.double(), r.int()
            rnd, sat = ROUNDING[r.int(0, len(ROUNDING) - 1)], bool(r.int(0, 1))
            body.append(BodyOp(name, bargs, btype, attr, f.hex() if f != 0.0 or math.copysign(1.0, f) < 0 else "", i,
                               rnd, sat))
        ops.append(FuncOp(kind, args, results, binding, offsets, sizes, strides, data, splat, n_in, maps,
                          reduction, ranges, tuple(body), r.ints(), r.int()))
    root, epilogue = r.int(), r.ints()
    if r.pos != len(payload):
        r.fail(f"{len(payload) - r.pos} bytes after the end of the compute section")
    tiled = tiles if root >= 0 else []
    return ExecDispatch(dispatch, symbol, "", bindings, values, tuple(ops), root, epilogue,
                        tuple(o for o, _ in tiled), tuple(s for _, s in tiled))


def tasks_by_dispatch(instructions: list[Instruction]) -> dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """Each dispatch's `.task` directives' (offsets, sizes), in order: its tiles."""
    out: dict[int, list] = {}
    for ins in instructions:
        if ins.op == ".task" and ins.dispatch is not None:
            out.setdefault(ins.dispatch, []).append((tuple(ins.args[0]), tuple(ins.args[1])))
    return out


def program_binary(instructions: list[Instruction], described: list[ExecDispatch]) -> bytes:
    """The binary the plugin runs: `instructions` with a compute section per described dispatch."""
    from dataclasses import asdict

    return assemble(instructions, [Section(SECTION_COMPUTE, d.dispatch, encode_section(asdict(d)))
                                   for d in described])


def load_program(path: Path) -> ExecProgram:
    """What the binary at `path` says each dispatch computes; BinaryError (file: offset N: reason)."""
    data = read_bytes(path)
    instructions = disassemble(data, path)
    tiles = tasks_by_dispatch(instructions)
    out = []
    for sec, offset in sections(data, path):
        if sec.kind == SECTION_COMPUTE:
            d = decode_section(sec.payload, sec.dispatch, tiles.get(sec.dispatch, []), offset, path)
            problem = check(d)
            if problem:
                raise BinaryError(path, offset, f"dispatch #{d.dispatch}: {problem}")
            out.append(d)
    return ExecProgram(tuple(out))
