"""Parse a snapshot twice: once for provenance, once for text positions.

The MLIR parser gives an op's line and column only when the op carries no
explicit `loc(...)`; IREE snapshots printed with --mlir-print-debuginfo
carry one on every op (we need them: they name the ONNX nodes). So we also
parse a "positions copy" of the text in which every `loc(...)` is replaced
by the same number of spaces and `#locN = loc(...)` alias lines are
blanked. Lines and columns in that copy equal the original file's, and the
parser reports them for every op. The two modules are walked in lockstep:
op i of one is op i of the other.

The `{-# dialect_resources ... #-}` blob section is cut from the positions
copy: it is the largest part of a model with weights and the parser does
not need the blobs to accept `dense_resource<...>` references.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..lazy_import import lazy_module

from ..errors import StudioError
from .context import first_diagnostic, mlir_context

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

_IDENT_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.$-#%@"
)
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


class SnapshotParseError(StudioError):
    """The MLIR parser rejected a snapshot; carries its first diagnostic."""

    def __init__(self, path: str | Path | None, line: int | None, col: int | None, message: str):
        super().__init__(path if path is not None else "<text>", message, line=line, col=col)
        self.path = str(self.path)
        self.message = message


@dataclass(frozen=True)
class TextRange:
    """1-based lines and columns; end_col is the column of the last char."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int

    def slice(self, text: str) -> str:
        lines = text.split("\n")[self.start_line - 1 : self.end_line]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][self.start_col - 1 : self.end_col]
        lines[0] = lines[0][self.start_col - 1 :]
        lines[-1] = lines[-1][: self.end_col]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "start_line": self.start_line,
            "start_col": self.start_col,
            "end_line": self.end_line,
            "end_col": self.end_col,
        }


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal whose opening quote is at i."""
    n = len(text)
    j = i + 1
    while j < n:
        q = text.find('"', j)
        if q < 0:
            return n
        # count backslashes before the quote
        k = q - 1
        while k >= j and text[k] == "\\":
            k -= 1
        if (q - k - 1) % 2 == 0:
            return q + 1
        j = q + 1
    return n


def _match_paren(text: str, i: int) -> int:
    """Index just past the ')' closing the '(' at i; strings respected."""
    depth = 0
    n = len(text)
    j = i
    while j < n:
        c = text[j]
        if c == '"':
            j = _skip_string(text, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n


def _blank(span: str) -> str:
    if "\n" not in span:
        return " " * len(span)
    return "\n".join(" " * len(part) for part in span.split("\n"))


def _resource_section(text: str) -> tuple[int, int] | None:
    start = text.rfind("\n{-#")
    if start < 0:
        if not text.startswith("{-#"):
            return None
        start = 0
    else:
        start += 1
    end = text.find("#-}", start)
    return (start, len(text) if end < 0 else end + 3)


def blank_locations(text: str, drop_resources: bool = True) -> str:
    """The positions copy: locs blanked, alias lines blanked, blobs cut."""
    limit = len(text)
    tail = ""
    if drop_resources:
        section = _resource_section(text)
        if section is not None:
            limit = section[0]
            # keep the line count: the cut section becomes empty lines
            tail = "\n" * text.count("\n", section[0], section[1]) + text[section[1] :]
    out: list[str] = []
    pos = 0
    i = 0
    while True:
        q = text.find('"', i, limit)
        lc = text.find("loc(", i, limit)
        if lc < 0:
            break
        if 0 <= q < lc:
            i = _skip_string(text, q)
            continue
        if lc > 0 and text[lc - 1] in _IDENT_CHARS:
            i = lc + 4
            continue
        end = _match_paren(text, lc + 3)
        line_start = text.rfind("\n", 0, lc) + 1
        start = lc
        if text.startswith("#", line_start) and text[line_start:lc].rstrip().endswith("="):
            start = line_start  # an alias definition: blank the whole line
        out.append(text[pos:start])
        out.append(_blank(text[start:end]))
        pos = i = end
    out.append(text[pos:limit])
    out.append(tail)
    return "".join(out)


_OP_END_STOPS = re.compile(r'["\n()\[\]{}]')


def op_end(text: str, line_offsets: list[int], line: int, col: int) -> tuple[int, int]:
    """(end_line, end_col) of the op starting at line:col in the positions copy.

    The op ends at the first newline where the bracket depth is back at 0.
    Jumps from one quote, newline or bracket to the next (a regex search):
    executables hold long runs of other characters.
    """
    i = line_offsets[line - 1] + col - 1
    n = len(text)
    depth = 0
    search = _OP_END_STOPS.search
    while True:
        m = search(text, i)
        if m is None:
            i = n
            break
        j = m.start()
        c = text[j]
        if c == '"':
            i = _skip_string(text, j)
            continue
        if c == "\n":
            if depth <= 0:
                i = j
                break
        else:
            depth += _BRACKETS[c]
        i = j + 1
    # last non-blank char before i
    j = i - 1
    while j > 0 and text[j] in " \t\r":
        j -= 1
    end_line = _line_of(line_offsets, j)
    return end_line, j - line_offsets[end_line - 1] + 1


def _line_of(line_offsets: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(line_offsets, offset)


def line_offsets(text: str) -> list[int]:
    offsets = [0]
    i = text.find("\n")
    while i >= 0:
        offsets.append(i + 1)
        i = text.find("\n", i + 1)
    return offsets


def parse_module(text: str, path: str | Path | None = None) -> tuple[ir.Context, ir.Module]:
    """Parse in a fresh context; SnapshotParseError with the first diagnostic."""
    ctx = mlir_context(allow_unregistered=False)
    try:
        module = ir.Module.parse(text, ctx)
    except ir.MLIRError as e:
        raise SnapshotParseError(path, *first_diagnostic(e)) from None
    return ctx, module


def op_position(op: ir.Operation) -> tuple[int, int] | None:
    loc = op.location
    if isinstance(loc, ir.FileLineColLoc):
        return loc.start_line, loc.start_col
    try:
        loc = ir.FileLineColLoc(loc)
    except (TypeError, ValueError):
        return None
    return loc.start_line, loc.start_col


class ParsedSnapshot:
    """Both parses of one snapshot and the op-to-position mapping."""

    def __init__(self, text: str, path: str | Path | None = None):
        self.text = text
        self.path = path
        self.ctx, self.module = parse_module(text, path)
        self.positions_text = blank_locations(text)
        self._pos_ctx, self._pos_module = parse_module(self.positions_text, path)
        self.line_offsets = line_offsets(self.positions_text)

    def walk_pairs(self):
        """(original op, positions op) in pre-order, in lockstep."""
        a: list[ir.Operation] = []
        b: list[ir.Operation] = []

        def ca(op):
            a.append(op)
            return ir.WalkResult.ADVANCE

        def cb(op):
            b.append(op)
            return ir.WalkResult.ADVANCE

        self.module.operation.walk(ca, ir.WalkOrder.PRE_ORDER)
        self._pos_module.operation.walk(cb, ir.WalkOrder.PRE_ORDER)
        if len(a) != len(b):
            raise SnapshotParseError(
                self.path, 0, 0, "positions copy parsed to a different op count"
            )
        return zip(a, b)

    def text_range(self, pos_op: ir.Operation) -> TextRange | None:
        start = op_position(pos_op)
        if start is None or start[0] <= 0:
            return None
        end_line, end_col = op_end(self.positions_text, self.line_offsets, *start)
        return TextRange(start[0], start[1], end_line, end_col)
