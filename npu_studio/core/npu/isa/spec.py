"""The generic NPU's instruction set: opcodes, operand fields and the tables their codes index.

docs/npu-isa.md is the reference; this module is the one place its tables live in code. The
text form, the binary form and the emitter all read them, so the three cannot disagree. The
codes of every table are part of the binary format: a new entry goes at the end and an old one
never moves (tests/core/npu/isa checks a few encodings byte by byte against the document).
"""

from __future__ import annotations

from dataclasses import dataclass

ISA_VERSION = 2  # 2: padded and pitched DMA, per-dispatch sections after the instructions
MAGIC = b"NPUA"
# magic, version u16, header size u16, strings u32, instructions u32, sections u32, body bytes u32, crc32 u32
HEADER_SIZE = 28
SECTION_HEAD = 12  # kind u32, dispatch u32, payload bytes u32
SECTION_COMPUTE = 1  # what a dispatch computes on each tile (docs/npu-isa.md, "Sections")
MAX_SECTION = 1 << 30  # bytes of one section's payload
RECORD_HEAD = 12  # opcode u8, engine u8, operand count u16, dispatch u32, task u32
NO_TAG = 0xFFFF_FFFF  # a dispatch or task field with no value (a directive of the whole program)
U64_MAX = (1 << 64) - 1
MAX_OPERANDS = 4096  # a record with more is corrupt (a MAC tile reads a handful of SRAM tiles)
MAX_STRING = 1 << 20  # bytes of one string in the string table

# Engines: DMA channels 0..63, then the MAC array, the vector unit, the host CPU; 255 = none.
MAX_DMA_CHANNELS = 64
ENGINE_MAC, ENGINE_VEC, ENGINE_CPU, ENGINE_NONE = 64, 65, 66, 255
_NAMED_ENGINES = {ENGINE_MAC: "mac", ENGINE_VEC: "vec", ENGINE_CPU: "cpu", ENGINE_NONE: "-"}


def engine_name(code: int) -> str | None:
    if code < MAX_DMA_CHANNELS:
        return f"dma{code}"
    return _NAMED_ENGINES.get(code)


def engine_code(name: str) -> int | None:
    for code, text in _NAMED_ENGINES.items():
        if text == name:
            return code
    if name.startswith("dma") and name[3:].isdigit() and str(int(name[3:])) == name[3:]:
        channel = int(name[3:])
        return channel if channel < MAX_DMA_CHANNELS else None
    return None


# Tables whose index is the code of an `enum` field (append only).
ENUMS: dict[str, tuple[str, ...]] = {
    "unit": ("mac", "vector", "dma", "cpu"),
    "placement": ("dram", "sram"),
    "buffer_kind": ("input", "output", "weight", "intermediate", "constant", "tile"),
    "dataflow": ("os", "ws"),  # output-stationary, weight-stationary
    "etype": ("none", "i1", "i8", "ui8", "i16", "i32", "i64", "f8E4M3FN", "f8E5M2", "f16", "bf16", "f32", "f64"),
    "scale": ("none", "per-tensor", "per-channel"),
    "rounding": ("none", "half-even", "half-away", "truncate"),
    "vector_class": ("elementwise", "pooling", "reduction", "softmax", "other"),
    "transfer": ("copy", "transpose", "broadcast", "insert", "pad"),
}
# Bits of a `mask` field: the vector unit's functions (bit i = FUNCTIONS[i]; append only).
FUNCTIONS = ("add", "sub", "mul", "div", "max", "min", "compare", "select", "neg", "abs", "exp", "log", "tanh",
             "logistic", "sqrt", "rsqrt", "pow", "erf", "floor", "round", "and", "or", "xor", "shift", "roundeven",
             "itof", "ftoi", "gather")


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # uint | addr | enum | str | mask | engine | list (of addresses) | ints (a list of uints)
    table: str = ""  # the ENUMS table of an enum field


@dataclass(frozen=True)
class Opcode:
    code: int
    mnemonic: str
    engines: str  # which engines may run it: dma | mac | vec | cpu | any | none
    fields: tuple[Field, ...]
    doc: str


def _f(spec: str) -> tuple[Field, ...]:
    """'a:addr rows:uint flow:enum/dataflow' -> fields."""
    out = []
    for item in spec.split():
        name, kind = item.split(":")
        kind, _, table = kind.partition("/")
        out.append(Field(name, kind, table))
    return tuple(out)


OPCODES: tuple[Opcode, ...] = (
    Opcode(0x01, ".dispatch", "none", _f("index:uint unit:enum/unit kind:str symbol:str location:str"),
           "start of a dispatch's instructions"),
    Opcode(0x02, ".buffer", "none", _f("name:str placement:enum/placement kind:enum/buffer_kind dtype:str "
                                       "addr:addr size:uint"),
           "a buffer the program addresses: its DRAM or SRAM address and size in bytes"),
    Opcode(0x03, ".task", "none", _f("offsets:ints sizes:ints deps:ints"),
           "start of a task's instructions: its tile (offset and size per loop of the dispatch) and the tasks "
           "it depends on"),
    Opcode(0x10, "dma.load", "dma", _f("dst:addr src:addr rows:uint row:uint stride:uint top:uint bottom:uint "
                                       "left:uint right:uint esize:uint pad:uint"),
           "DRAM -> SRAM: `rows` rows of `row` bytes, `stride` bytes apart in DRAM, written packed in SRAM "
           "with `top`/`bottom` rows and `left`/`right` bytes of padding, each pad element (`esize` bytes) "
           "the bit pattern `pad`"),
    Opcode(0x11, "dma.store", "dma", _f("dst:addr src:addr rows:uint row:uint stride:uint pitch:uint"),
           "SRAM -> DRAM: `rows` rows of `row` bytes, `pitch` bytes apart in SRAM, `stride` bytes apart in DRAM"),
    Opcode(0x12, "dma.copy", "dma", _f("mode:enum/transfer read:uint written:uint pad:str dst:list src:list"),
           "DRAM -> DRAM: one descriptor reading `read` bytes and writing `written` (pad: the value written "
           "around the data)"),
    Opcode(0x20, "mac.tile", "mac", _f("flow:enum/dataflow in:enum/etype acc:enum/etype rate:uint batch:uint "
                                       "m:uint n:uint k:uint accumulate:uint drain:uint scale:enum/scale "
                                       "round:enum/rounding zp:uint clamp:uint bias:uint out:enum/etype "
                                       "post:mask dst:list src:list"),
           "one GEMM tile (batch x M x N x K) on the MAC array, then its output stage and fused vector functions"),
    Opcode(0x30, "vec.op", "vec", _f("class:enum/vector_class elems:uint cpe:uint fn:mask dst:list src:list"),
           "`elems` elements through the vector unit at `cpe` cycles per element and lane"),
    Opcode(0x40, "cpu.call", "cpu", _f("dispatch:uint ops:uint dst:list src:list"),
           "a fallback dispatch run by the host CPU on DRAM buffers"),
    Opcode(0x50, "sem.wait", "any", _f("on:engine count:uint"),
           "the issuing engine waits until engine `on` has completed `count` instructions"),
    Opcode(0x51, "barrier", "none", (), "every engine drains: the end of the program"),
)
BY_CODE = {op.code: op for op in OPCODES}
BY_MNEMONIC = {op.mnemonic: op for op in OPCODES}
WORK_ENGINES = ("dma", "mac", "vec", "cpu")  # instructions on these count towards an engine's semaphore


def engine_allowed(op: Opcode, code: int) -> bool:
    """May `op` carry engine `code`?"""
    if op.engines == "none":
        return code == ENGINE_NONE
    if op.engines == "any":
        return code != ENGINE_NONE and engine_name(code) is not None
    if op.engines == "dma":
        return code < MAX_DMA_CHANNELS
    return code == {"mac": ENGINE_MAC, "vec": ENGINE_VEC, "cpu": ENGINE_CPU}[op.engines]


def counts_as_work(op: Opcode) -> bool:
    """Does completing `op` advance its engine's semaphore (sem.wait's `count`)?"""
    return op.engines in WORK_ENGINES
