"""A fast reader for the NPU MLIR text as `npu_dialect.to_mlir` prints it.

Reading a 120,000-task program back through the MLIR bindings takes about a
minute, nearly all of it in Python calls into the bindings, one per attribute.
The printed form is regular: one op per line, attribute dictionaries whose
values are integers (`: i64`), booleans, strings, arrays and dictionaries. This
reader matches each line with one regular expression and turns all the
dictionaries into Python at once with `json` (after rewriting `key = v : i64`
to `"key": v` outside strings).

It reads only what it is sure MLIR would read the same way. Anything else -
comments, escapes in strings, floats, other types, locations, undefined or
duplicate SSA names, duplicate keys, ops outside the `npu.` namespace - makes it
return None, and the caller parses with MLIR as before, which also produces the
right error message. Its result equals `npu_dialect._read(parse_module(text))`
(tests/core/npu/test_npu_text_reader.py checks this, and the round-trip tests
go through it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...textio import without_gc

_HEAD = re.compile(r"module(?: attributes (\{.*\}))? \{")
_SIMPLE = re.compile(r'"(npu\.[\w.]+)"\(\) (\{.*\}) : \(\) -> \(\)')
_TASK_OPEN = re.compile(r'%([\w.$-]+) = "(npu\.[\w.]+)"\(((?:%[\w.$-]+(?:, %[\w.$-]+)*)?)\) \(\{')
_TASK_CLOSE = re.compile(r"\}\) (\{.*\}) : \(((?:!npu\.token(?:, !npu\.token)*)?)\) -> !npu\.token")

# Outside strings only (see _to_json): where a bare key starts; what must send us to MLIR.
_KEY_START = re.compile(r"(?:(?<=\{)|(?<=, ))(?=[A-Za-z_][\w.$-]* = )")
_NOT_OURS = ":=()<>%!#@^"  # other types, locations, SSA names, ... after keys and i64 are rewritten
_LONG_INT = re.compile(r"\d{19}")  # MLIR rejects i64 values out of range
_PART, _DICT, _COLON = "\x00", "\x02", "\x01"  # separators; never in a text we accept


class _NotCanonical(Exception):
    """The text uses something this reader leaves to MLIR."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _NotCanonical("duplicate key")  # MLIR rejects it with a message of its own
    return d


def _to_json(dicts: list[str]) -> list[dict[str, Any]]:
    """Every attribute dictionary text in `dicts`, as Python, in one json.loads."""
    parts = _DICT.join(dicts).split('"')  # no backslashes (checked): odd parts are string contents
    code = _PART.join(parts[0::2]).replace(" : i64", "")
    rest = code.replace(" = ", "")
    if any(ch in rest for ch in _NOT_OURS) or "null" in rest or _LONG_INT.search(rest):
        raise _NotCanonical("attribute syntax beyond i64, bool, string, array, dictionary")
    parts[0::2] = _KEY_START.sub('"', code).replace(" = ", '": ').split(_PART)
    try:
        return json.loads("[" + '"'.join(parts).replace(_DICT, ",") + "]", object_pairs_hook=_unique_keys,
                          parse_float=_no_floats, parse_constant=_no_floats)
    except ValueError as exc:
        raise _NotCanonical(str(exc)) from None


def _no_floats(text: str):
    raise _NotCanonical(f"{text}: a float (MLIR reads it as a FloatAttr, which the npu dialect has not)")


@without_gc
def read(text: str) -> tuple[dict[str, Any], list[tuple]] | None:
    """(module attributes, [(name, attrs, steps, deps), ...]) as npu_dialect._read gives,
    or None when the text is not in the printed form (then parse it with MLIR)."""
    if "\\" in text or "//" in text or any(sep in text for sep in (_PART, _DICT, _COLON)):
        return None
    try:
        return _read(text)
    except _NotCanonical:
        return None


def _read(text: str) -> tuple[dict[str, Any], list[tuple]]:
    lines = [ln.strip() for ln in text.split("\n") if ln and not ln.isspace()]
    if not lines or lines[-1] != "}":
        raise _NotCanonical("no closing brace")
    head = _HEAD.fullmatch(lines[0])
    if head is None:
        raise _NotCanonical("module line")
    dicts = [head.group(1) or "{}"]
    # (name, dict index, [(step name, dict index)], [operand names], result name or None)
    ops: list[tuple[str, int, list, list[str], str | None]] = []
    current = None
    for line in lines[1:-1]:
        simple = _SIMPLE.fullmatch(line)
        if simple is not None:
            dicts.append(simple.group(2))
            if current is None:
                ops.append((simple.group(1), len(dicts) - 1, [], [], None))
            else:
                current[2].append((simple.group(1), len(dicts) - 1))
            continue
        if current is None:
            opened = _TASK_OPEN.fullmatch(line)
            if opened is None:
                raise _NotCanonical(line[:40])
            operands = opened.group(3).replace("%", "").split(", ") if opened.group(3) else []
            current = (opened.group(2), -1, [], operands, opened.group(1))
            continue
        closed = _TASK_CLOSE.fullmatch(line)
        if closed is None:
            raise _NotCanonical(line[:40])
        types = closed.group(2).split(", ") if closed.group(2) else []
        if len(types) != len(current[3]):
            raise _NotCanonical("operand types")
        if not current[2]:
            raise _NotCanonical("a task without steps")  # MLIR gives a region without a block
        dicts.append(closed.group(1))
        ops.append((current[0], len(dicts) - 1, current[2], current[3], current[4]))
        current = None
    if current is not None:
        raise _NotCanonical("unclosed region")
    attrs = _to_json(dicts)
    if not all("." in key for key in attrs[0]):
        raise _NotCanonical("module attribute without a dialect prefix")  # builtin.module refuses it
    return attrs[0], _resolve(ops, attrs)


def _resolve(ops, attrs) -> list[tuple]:
    """Operands to the task id of the op that defines them, as npu_dialect._read does."""
    defined: dict[str, int | None] = {}
    for name, at, _, _, result in ops:
        if result is not None:
            if result in defined:
                raise _NotCanonical(f"%{result} defined twice")
            task_id = attrs[at].get("id")
            if isinstance(task_id, bool):
                raise _NotCanonical("boolean task id")
            defined[result] = task_id if isinstance(task_id, int) else None
    out = []
    for name, at, steps, operands, result in ops:
        if result in operands or any(o not in defined for o in operands):
            raise _NotCanonical("operand not defined by another op")
        out.append((name, attrs[at], [(s, attrs[i]) for s, i in steps], [defined[o] for o in operands]))
    return out
