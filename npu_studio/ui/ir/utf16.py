"""Columns between Python's strings (code points) and Qt's (UTF-16 units).

Qt counts a character outside the Basic Multilingual Plane (an emoji) as two units; Python, the lexer
and the navigation index count it as one. Lines without such characters (nearly all of them) map
to themselves, and are recognised at the cost of one C scan.
"""

from __future__ import annotations


def has_wide(text: str) -> bool:
    """`text` holds a character that Qt counts as two units."""
    return not text.isascii() and max(text) > "\uffff"


def to_utf16(text: str, col: int) -> int:
    """Qt's column for code-point column `col` of `text`."""
    if not has_wide(text):
        return col
    return col + sum(1 for ch in text[:col] if ch > "\uffff")


def from_utf16(text: str, col16: int) -> int:
    """The code-point column of `text` at Qt's column `col16` (inside a character: that character)."""
    if not has_wide(text):
        return col16
    units = 0
    for n, ch in enumerate(text):
        units += 2 if ch > "\uffff" else 1
        if units > col16:
            return n
    return len(text)


def utf16_offsets(text: str) -> list[int]:
    """Qt's column of every code-point column of `text`, and of its end."""
    out, units = [0], 0
    for ch in text:
        units += 2 if ch > "\uffff" else 1
        out.append(units)
    return out
