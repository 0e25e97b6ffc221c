"""Instructions and their text form (the assembly): one line each, tagged with dispatch and task.

A line is `TAG MNEMONIC ENGINE field=value ...`: TAG is `d3.t12` (dispatch 3, task 12), `d3`
(a dispatch's directive) or `-` (the whole program's); ENGINE is `dma0`, `mac`, `vec`, `cpu` or
`-`. Values: decimal integers (uint), hexadecimal addresses (addr), table names (enum, engine),
JSON strings (str), `fn+fn` or `-` (mask), `0x..,0x..` or `-` (list), `1,2` or `-` (ints). Lines starting with `;`
are comments. docs/npu-isa.md describes every instruction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import BadFile
from .spec import BY_MNEMONIC, ENUMS, FUNCTIONS, ISA_VERSION, U64_MAX, Field, Opcode, engine_allowed, engine_code

HEADER_COMMENT = f"; NPU Studio assembly for the generic NPU, ISA version {ISA_VERSION} (docs/npu-isa.md)"


@dataclass(frozen=True)
class Instruction:
    op: str  # mnemonic
    engine: str  # engine name, "-" for none
    dispatch: int | None
    task: int | None
    args: tuple  # one value per field of the opcode: int, str, tuple[str, ...] (mask), tuple[int, ...] (list)

    @property
    def opcode(self) -> Opcode:
        return BY_MNEMONIC[self.op]

    def tag(self) -> str:
        if self.dispatch is None:
            return "-"
        return f"d{self.dispatch}" + (f".t{self.task}" if self.task is not None else "")

    def line(self) -> str:
        values = " ".join(f"{f.name}={_show(f, v)}" for f, v in zip(self.opcode.fields, self.args))
        return f"{self.tag():<12} {self.op:<10} {self.engine:<4} {values}".rstrip()


def _show(f: Field, v) -> str:
    if f.kind == "uint":
        return str(v)
    if f.kind == "addr":
        return f"0x{v:x}"
    if f.kind in ("enum", "engine"):
        return v
    if f.kind == "str":
        return json.dumps(v, ensure_ascii=True)
    if f.kind == "mask":
        return "+".join(v) or "-"
    if f.kind == "ints":
        return ",".join(map(str, v)) or "-"
    return ",".join(f"0x{x:x}" for x in v) or "-"  # list


def to_text(instructions: list[Instruction]) -> str:
    return "\n".join([HEADER_COMMENT, *(i.line() for i in instructions)]) + "\n"


_TAG = re.compile(r"^(?:-|d(\d+)(?:\.t(\d+))?)$")
_VALUE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s"]+)')
_UINT = re.compile(r"^(?:0|[1-9][0-9]*)$")
_HEX = re.compile(r"^0x[0-9a-f]+$")


def parse_text(text: str, path: str | Path = "<text>") -> list[Instruction]:
    """The instructions of an assembly text; BadFile naming path:line:col and the reason."""
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        out.append(_parse_line(raw, no, path))
    return out


def _parse_line(raw: str, no: int, path) -> Instruction:
    def fail(col: int, reason: str) -> BadFile:
        return BadFile(path, reason, line=no, col=col + 1)

    parts = list(re.finditer(r"\S+", raw))
    if len(parts) < 3:
        raise fail(0, "expected TAG MNEMONIC ENGINE field=value ...")
    tag, mnemonic, engine = parts[0], parts[1], parts[2]
    m = _TAG.match(tag.group())
    if not m:
        raise fail(tag.start(), f"tag {tag.group()!r}: expected d<dispatch>, d<dispatch>.t<task> or -")
    dispatch = int(m.group(1)) if m.group(1) is not None else None
    task = int(m.group(2)) if m.group(2) is not None else None
    op = BY_MNEMONIC.get(mnemonic.group())
    if op is None:
        raise fail(mnemonic.start(), f"unknown instruction {mnemonic.group()!r}")
    code = engine_code(engine.group())
    if code is None or not engine_allowed(op, code):
        raise fail(engine.start(), f"{op.mnemonic} cannot run on engine {engine.group()!r} (docs/npu-isa.md)")
    rest_at = engine.end()
    values = {}
    pos = rest_at
    for v in _VALUE.finditer(raw, rest_at):
        if raw[pos:v.start()].strip():
            raise fail(pos, f"expected field=value, got {raw[pos:v.start()].strip()!r}")
        if v.group(1) in values:
            raise fail(v.start(), f"field {v.group(1)!r} given twice")
        values[v.group(1)] = (v.group(2), v.start(2))
        pos = v.end()
    if raw[pos:].strip():
        raise fail(pos, f"expected field=value, got {raw[pos:].strip()!r}")
    args = []
    for f in op.fields:
        if f.name not in values:
            raise fail(len(raw.rstrip()), f"{op.mnemonic}: missing field {f.name!r}")
        text, col = values.pop(f.name)
        try:
            args.append(_read(f, text))
        except ValueError as e:
            raise fail(col, f"{f.name}: {e}") from None
    if values:
        name, (_, col) = next(iter(values.items()))
        raise fail(col - len(name) - 1, f"{op.mnemonic} has no field {name!r}")
    return Instruction(op.mnemonic, engine.group(), dispatch, task, tuple(args))


def _int(text: str, hexadecimal: bool) -> int:
    if not (_HEX if hexadecimal else _UINT).match(text):
        raise ValueError(f"expected {'a hexadecimal address (0x...)' if hexadecimal else 'a decimal integer'}, "
                         f"got {text!r}")
    value = int(text, 16 if hexadecimal else 10)
    if value > U64_MAX:
        raise ValueError(f"{text} does not fit 64 bits")
    return value


def _read(f: Field, text: str):
    if f.kind == "uint":
        return _int(text, False)
    if f.kind == "addr":
        return _int(text, True)
    if f.kind == "enum":
        if text not in ENUMS[f.table]:
            raise ValueError(f"expected one of {', '.join(ENUMS[f.table])}, got {text!r}")
        return text
    if f.kind == "engine":
        if engine_code(text) is None or text == "-":
            raise ValueError(f"unknown engine {text!r}")
        return text
    if f.kind == "str":
        if not (text.startswith('"') and text.endswith('"')):
            raise ValueError(f"expected a quoted string, got {text!r}")
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"bad string: {e.msg}") from None
    if text == "-":
        return ()
    if f.kind == "mask":
        names = tuple(text.split("+"))
        unknown = [n for n in names if n not in FUNCTIONS]
        if unknown:
            raise ValueError(f"unknown vector function {unknown[0]!r}")
        return tuple(n for n in FUNCTIONS if n in names)  # canonical: the bit order
    return tuple(_int(x, f.kind == "list") for x in text.split(","))  # list, ints
