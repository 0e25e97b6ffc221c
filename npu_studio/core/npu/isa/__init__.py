"""The generic NPU's instruction set (docs/npu-isa.md): emitter, assembler, disassembler.

spec.py      opcodes, operand fields and the tables their codes index
listing.py   an instruction and its text form (parse and print)
encoding.py  the binary form (assemble, disassemble with offset-naming errors)
emit.py      a planned NpuProgram -> instructions, each tagged with its dispatch and task

`program_assembly(program)` is the emitter a backend plugs in: an `Assembly` gives the text, the
binary and, per instruction, the dispatch and task it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..program.npu_ir import NpuProgram
from .encoding import BinaryError, assemble, disassemble
from .listing import HEADER_COMMENT, Instruction, parse_text, to_text
from .spec import MAGIC

TEXT_FIRST_LINE = 2  # line of the first instruction in `Assembly.text()` (after the header comment)


@dataclass(frozen=True)
class Assembly:
    instructions: tuple[Instruction, ...]

    def text(self) -> str:
        return to_text(list(self.instructions))

    def binary(self) -> bytes:
        return assemble(list(self.instructions))

    def tags(self) -> list[tuple[int | None, int | None]]:
        """(dispatch, task) of each instruction, in order: text line TEXT_FIRST_LINE + i is instruction i."""
        return [(i.dispatch, i.task) for i in self.instructions]


def program_assembly(program: NpuProgram, dispatch: int | None = None) -> Assembly:
    """The instructions of `program`, or of one dispatch as a program of its own."""
    from .emit import emit

    return Assembly(tuple(emit(program, None if dispatch is None else {dispatch})))


def from_binary(data: bytes, path: str | Path = "<binary>") -> Assembly:
    """BinaryError (file: offset N: reason) for anything that is not a valid binary."""
    return Assembly(tuple(disassemble(data, path)))


def from_text(text: str, path: str | Path = "<text>") -> Assembly:
    """BadFile (file:line:col: reason) for a line that is not an instruction."""
    return Assembly(tuple(parse_text(text, path)))


def looks_binary(data: bytes) -> bool:
    return data[:len(MAGIC)] == MAGIC


__all__ = ["Assembly", "BinaryError", "HEADER_COMMENT", "Instruction", "from_binary", "from_text", "looks_binary",
           "program_assembly"]
