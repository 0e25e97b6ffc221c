"""The binary form of a program: assemble (instructions -> bytes) and disassemble (bytes -> instructions).

Layout (docs/npu-isa.md, all little-endian):

  header, 28 bytes: magic "NPUA", version u16, header size u16, string count u32,
                    instruction count u32, section count u32, body size u32, CRC-32 of the body u32
  body:             the string table (per string: length u32, UTF-8 bytes),
                    then the instructions (per instruction: opcode u8, engine u8,
                    operand count u16, dispatch u32, task u32, operands u64 each),
                    then the sections (per section: kind u32, dispatch u32, payload size u32, payload)

Sections carry what a runtime needs beyond the instructions (the plugin's: what each dispatch
computes, hal/exec_binary); this module frames them and leaves their payload to their reader.

Operands follow the opcode's fields in order: an integer, an address, a table code, a string's
index or a mask is one u64; a list is its length, then its items. The disassembler checks every
byte against the specification before it trusts it and names the offset of the first that is
wrong (`BinaryError`): a truncated or corrupted file is one line, never a crash or an allocation
the file's own sizes ask for.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from ...errors import BadFile
from .listing import Instruction
from .spec import (BY_CODE, BY_MNEMONIC, ENUMS, FUNCTIONS, HEADER_SIZE, ISA_VERSION, MAGIC, MAX_OPERANDS,
                   MAX_SECTION, MAX_STRING, NO_TAG, RECORD_HEAD, SECTION_HEAD, U64_MAX, engine_allowed, engine_code,
                   engine_name)

_HEADER = struct.Struct("<4sHHIIIII")
_SECTION = struct.Struct("<III")
_RECORD = struct.Struct("<BBHII")
_LEN = struct.Struct("<I")


class BinaryError(BadFile):
    """A binary that is not a valid program: `file: offset N: reason`."""

    def __init__(self, path, offset: int, reason: str):
        super().__init__(path, f"offset {offset}: {reason}")
        self.offset = offset


@dataclass(frozen=True)
class Section:
    kind: int  # spec.SECTION_*
    dispatch: int
    payload: bytes


def assemble(instructions: list[Instruction], sections: list[Section] = ()) -> bytes:
    """The binary of `instructions` and `sections` (ValueError for an instruction the specification rejects)."""
    strings: dict[str, int] = {}
    records = []
    for ins in instructions:
        op = BY_MNEMONIC[ins.op]
        engine = engine_code(ins.engine)
        if engine is None or not engine_allowed(op, engine):
            raise ValueError(f"{ins.op}: engine {ins.engine!r} cannot run it")
        operands: list[int] = []
        for f, v in zip(op.fields, ins.args, strict=True):
            if f.kind in ("uint", "addr"):
                operands.append(v)
            elif f.kind == "enum":
                operands.append(ENUMS[f.table].index(v))
            elif f.kind == "engine":
                operands.append(engine_code(v))
            elif f.kind == "str":
                operands.append(strings.setdefault(v, len(strings)))
            elif f.kind == "mask":
                operands.append(sum(1 << FUNCTIONS.index(n) for n in set(v)))
            else:  # list, ints
                operands += [len(v), *v]
        if len(operands) > MAX_OPERANDS or any(not 0 <= x <= U64_MAX for x in operands):
            raise ValueError(f"{ins.op}: operands out of range")
        tag = (NO_TAG if ins.dispatch is None else ins.dispatch, NO_TAG if ins.task is None else ins.task)
        records.append(_RECORD.pack(op.code, engine, len(operands), *tag)
                       + struct.pack(f"<{len(operands)}Q", *operands))
    table = b"".join(_LEN.pack(len(b)) + b for b in (s.encode("utf-8") for s in strings))
    for sec in sections:
        if len(sec.payload) > MAX_SECTION or not 0 <= sec.dispatch < NO_TAG:
            raise ValueError(f"section of dispatch {sec.dispatch}: {len(sec.payload)} bytes")
        records.append(_SECTION.pack(sec.kind, sec.dispatch, len(sec.payload)) + sec.payload)
    body = table + b"".join(records)
    return _HEADER.pack(MAGIC, ISA_VERSION, HEADER_SIZE, len(strings), len(records) - len(sections), len(sections),
                        len(body), zlib.crc32(body)) + body


def with_sections(data: bytes, sections: list[Section], path: str | Path = "<binary>") -> bytes:
    """`data` (a valid binary) with `sections` in place of its own."""
    return assemble(disassemble(data, path), sections)


def disassemble(data: bytes, path: str | Path = "<binary>") -> list[Instruction]:
    """The instructions of a binary; BinaryError naming `path` and the offset of the first bad byte."""
    return [ins for ins, _span in disassemble_spans(data, path)]


def disassemble_spans(data: bytes, path: str | Path = "<binary>") -> list[tuple[Instruction, tuple[int, int]]]:
    """Each instruction of a binary with the (offset, size) of its record: where the backend API's
    emitted lines point into the binary."""
    return _decode(data, path)[0]


def sections(data: bytes, path: str | Path = "<binary>") -> list[tuple[Section, int]]:
    """The sections of a binary, each with the offset of its payload."""
    return _decode(data, path)[1]


def _decode(data: bytes, path) -> tuple[list, list]:
    if len(data) < HEADER_SIZE:
        raise BinaryError(path, len(data), f"truncated: the header needs {HEADER_SIZE} bytes, the file has "
                                           f"{len(data)}")
    magic, version, header_size, n_strings, n_records, n_sections, body_size, crc = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BinaryError(path, 0, f"not an NPU program binary (magic {magic!r}, expected {MAGIC!r})")
    if version != ISA_VERSION:
        raise BinaryError(path, 4, f"ISA version {version} not supported (want {ISA_VERSION})")
    if header_size != HEADER_SIZE:
        raise BinaryError(path, 6, f"header size {header_size}, expected {HEADER_SIZE}")
    end = HEADER_SIZE + body_size
    if len(data) < end:
        raise BinaryError(path, len(data), f"truncated: the header says {end} bytes, the file has {len(data)}")
    if len(data) > end:
        raise BinaryError(path, end, f"{len(data) - end} bytes after the end the header gives")
    strings, pos = _strings(data, n_strings, end, path)
    out = []
    for _ in range(n_records):
        ins, after = _record(data, pos, end, strings, path)
        out.append((ins, (pos, after - pos)))
        pos = after
    found = []
    for i in range(n_sections):
        if pos + SECTION_HEAD > end:
            raise BinaryError(path, pos, f"truncated: section {i} of {n_sections} needs {SECTION_HEAD} bytes, "
                                         f"{end - pos} left")
        kind, dispatch, size = _SECTION.unpack_from(data, pos)
        if size > end - pos - SECTION_HEAD:
            raise BinaryError(path, pos + 8, f"section {i}: {size} bytes run past the end")
        found.append((Section(kind, dispatch, data[pos + SECTION_HEAD:pos + SECTION_HEAD + size]), pos + SECTION_HEAD))
        pos += SECTION_HEAD + size
    if pos != end:
        raise BinaryError(path, pos, f"{end - pos} bytes after the last of {n_records} instructions and "
                                     f"{n_sections} sections")
    if zlib.crc32(data[HEADER_SIZE:end]) != crc:
        raise BinaryError(path, 24, "corrupted: the body's CRC-32 does not match the header's")
    return out, found


def _strings(data: bytes, count: int, end: int, path) -> tuple[list[str], int]:
    pos, out = HEADER_SIZE, []
    for i in range(count):
        if pos + 4 > end:
            raise BinaryError(path, pos, f"truncated: string {i} of {count} has no length")
        (n,) = _LEN.unpack_from(data, pos)
        if n > MAX_STRING or pos + 4 + n > end:
            raise BinaryError(path, pos, f"string {i}: length {n} runs past the end ({end - pos - 4} bytes left)")
        try:
            out.append(data[pos + 4:pos + 4 + n].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise BinaryError(path, pos + 4 + e.start, f"string {i} is not UTF-8") from None
        pos += 4 + n
    return out, pos


def _record(data: bytes, pos: int, end: int, strings: list[str], path) -> tuple[Instruction, int]:
    if pos + RECORD_HEAD > end:
        raise BinaryError(path, pos, f"truncated: an instruction needs {RECORD_HEAD} bytes, {end - pos} left")
    code, engine, n, dispatch, task = _RECORD.unpack_from(data, pos)
    op = BY_CODE.get(code)
    if op is None:
        raise BinaryError(path, pos, f"unknown opcode 0x{code:02x}")
    if not engine_allowed(op, engine):
        raise BinaryError(path, pos + 1, f"{op.mnemonic}: engine code {engine} cannot run it")
    if n > MAX_OPERANDS or pos + RECORD_HEAD + 8 * n > end:
        raise BinaryError(path, pos + 2, f"{op.mnemonic}: {n} operands run past the end")
    if dispatch == NO_TAG and task != NO_TAG:
        raise BinaryError(path, pos + 8, f"{op.mnemonic}: a task with no dispatch")
    operands = struct.unpack_from(f"<{n}Q", data, pos + RECORD_HEAD)
    args, i = [], 0

    def take() -> int:
        nonlocal i
        if i >= n:
            raise BinaryError(path, pos + 2, f"{op.mnemonic}: {n} operands, its fields need more")
        i += 1
        return operands[i - 1]

    for f in op.fields:
        at = pos + RECORD_HEAD + 8 * i
        v = take()
        if f.kind in ("uint", "addr"):
            args.append(v)
        elif f.kind == "enum":
            table = ENUMS[f.table]
            if v >= len(table):
                raise BinaryError(path, at, f"{op.mnemonic} {f.name}: code {v} is not in its table of {len(table)}")
            args.append(table[v])
        elif f.kind == "engine":
            name = engine_name(v) if v < 256 else None
            if name is None or name == "-":
                raise BinaryError(path, at, f"{op.mnemonic} {f.name}: no engine has code {v}")
            args.append(name)
        elif f.kind == "str":
            if v >= len(strings):
                raise BinaryError(path, at, f"{op.mnemonic} {f.name}: string {v} of {len(strings)}")
            args.append(strings[v])
        elif f.kind == "mask":
            if v >> len(FUNCTIONS):
                raise BinaryError(path, at, f"{op.mnemonic} {f.name}: bits beyond the {len(FUNCTIONS)} functions")
            args.append(tuple(name for b, name in enumerate(FUNCTIONS) if v >> b & 1))
        else:  # list, ints
            if v > n - i:
                raise BinaryError(path, at, f"{op.mnemonic} {f.name}: {v} items, {n - i} operands left")
            args.append(tuple(take() for _ in range(v)))
    if i != n:
        raise BinaryError(path, pos + 2, f"{op.mnemonic}: {n} operands, its fields take {i}")
    ins = Instruction(op.mnemonic, engine_name(engine), None if dispatch == NO_TAG else dispatch,
                      None if task == NO_TAG else task, tuple(args))
    return ins, pos + RECORD_HEAD + 8 * n
