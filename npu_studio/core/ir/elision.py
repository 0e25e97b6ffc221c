"""Elision of huge constants for display: the text an IR view shows and the column maps back (no Qt).

A constant longer than ELIDE_OVER characters (a quoted hex blob: `dense<"0x...">`, a resource value,
rodata; or the body of a long `dense<[...]>` list) keeps its first characters and ends in
`…(N bytes elided)`, N counting the characters of the file that are not shown; a line still longer
than LONG_LINE characters after that is cut to its first ones and `…(N characters elided)`. Lines are never removed,
so line numbers stay those of the file; only columns move, and `Elision` spans map them.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass

ELIDE_OVER = 200  # constants longer than this many characters get elided
LONG_LINE = 20_000  # a line still longer than this (no constant: a list of operands) is cut
_LONG_KEEP = 2_000  # the characters of a cut line that stay visible
_KEEP = 32  # characters of an elided constant that stay visible
# One pattern per kind, each with a literal prefix for re's fast search: one alternation of the two
# has none and scans a 16 MB snapshot four times slower. They cannot overlap: a list body holds no `"`.
_HEX = re.compile(r'"0x[0-9A-Fa-f]{%d,}"' % ELIDE_OVER)
_LIST = re.compile(r'dense<\[[^<>"\n]{%d,}\]>' % ELIDE_OVER)


@dataclass(frozen=True)
class Elision:
    """One elided span of a line: display and real columns are 0-based."""

    display_col: int
    real_col: int
    display_len: int
    real_len: int


def elide_text(text: str) -> tuple[str, dict[int, list[Elision]]]:
    """The display text and, per 0-based line number, its elisions (see the module doc)."""
    pieces: list[str] = []
    elisions: dict[int, list[Elision]] = {}
    pos = 0
    line = 0
    line_start = 0  # offset of the current line in `text`
    shift = 0  # display minus real column on the current line so far
    hexes = ((m.start(), m.end(), 3) for m in _HEX.finditer(text))
    lists = ((m.start(), m.end(), 7) for m in _LIST.finditer(text))
    for start, end, keep in heapq.merge(hexes, lists):
        newlines = text.count("\n", pos, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", pos, start) + 1
            shift = 0
        head = text[start:start + keep + _KEEP]
        tail = '"' if keep == 3 else "]>"
        hidden = (end - start) - len(head) - len(tail)
        shown = f"{head}…({hidden} bytes elided){tail}"
        real_col = start - line_start
        elisions.setdefault(line, []).append(Elision(real_col + shift, real_col, len(shown), end - start))
        shift += len(shown) - (end - start)
        pieces.append(text[pos:start])
        pieces.append(shown)
        pos = end
    if elisions:
        pieces.append(text[pos:])
        text = "".join(pieces)
    return _cut_long_lines(text, elisions) if _may_hold_a_long_line(text) else (text, elisions)


def _may_hold_a_long_line(text: str) -> bool:
    """False when no line of `text` is over LONG_LINE characters, found without a Python step per line:
    such a line holds a whole window of LONG_LINE // 2 characters (at a multiple of that) with no newline."""
    step = LONG_LINE // 2
    find = text.find
    return any(find("\n", pos, pos + step) < 0 for pos in range(0, len(text) - step + 1, step))


def _cut_long_lines(display: str, elisions: dict[int, list[Elision]]) -> tuple[str, dict[int, list[Elision]]]:
    """Lines of `display` still longer than LONG_LINE keep their first characters and end in
    `…(N characters elided)`: Qt lays a line out whole when it comes on screen (a 50 MB line of
    operands froze the window for 35 s)."""
    pieces: list[str] = []
    pos, line, cut = 0, 0, False
    while True:
        nl = display.find("\n", pos)
        end = len(display) if nl < 0 else nl
        if end - pos > LONG_LINE:
            cut = True
            spans = elisions.get(line, [])
            col = _LONG_KEEP
            inside = next((e for e in spans if e.display_col <= col < e.display_col + e.display_len), None)
            if inside is not None:  # never in the middle of a constant's own elision
                col = inside.display_col
            real_col = display_to_real_col(col, spans)
            real_end = display_to_real_col(end - pos, spans)
            shown = f"…({real_end - real_col} characters elided)"
            elisions[line] = [e for e in spans if e.display_col + e.display_len <= col] + \
                [Elision(col, real_col, len(shown), real_end - real_col)]
            pieces.append(display[pos:pos + col] + shown)
        else:
            pieces.append(display[pos:end])
        if nl < 0:
            break
        pos, line = nl + 1, line + 1
    return ("\n".join(pieces), elisions) if cut else (display, elisions)


def display_to_real_col(col: int, spans: list[Elision]) -> int:
    """Map a 0-based column of the displayed line to the file line (inside an elision: its start)."""
    out = col
    for e in spans:
        if col >= e.display_col + e.display_len:
            out += e.real_len - e.display_len
        elif col >= e.display_col:
            return e.real_col
    return out


def real_to_display_col(col: int, spans: list[Elision]) -> int:
    """Map a 0-based column of the file line to the displayed line."""
    out = col
    for e in spans:
        if col >= e.real_col + e.real_len:
            out += e.display_len - e.real_len
        elif col > e.real_col:
            return e.display_col  # inside the elided text: its start
    return out
