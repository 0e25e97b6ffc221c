"""Positions copy, op ends and parse errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_studio.core.ir.mlir_text import (
    ParsedSnapshot,
    SnapshotParseError,
    blank_locations,
    line_offsets,
    op_end,
)

SAMPLE = '''#loc1 = loc("Conv_0")
func.func @f(%a: i32 loc("arg(0)")) -> i32 {
  %0 = arith.addi %a, %a : i32 loc(fused[#loc1, callsite("x(" at "y.py":1:2)])
  %1 = arith.constant {s = "loc(keep)"} 1 : i32 loc(#loc1)
  return %0 : i32 loc(#loc1)
} loc(#loc1)
#loc2 = loc("tail")
'''


def test_blanking_keeps_positions_and_strings():
    out = blank_locations(SAMPLE)
    assert len(out) == len(SAMPLE)
    assert [len(x) for x in out.split("\n")] == [len(x) for x in SAMPLE.split("\n")]
    assert "loc(" not in out.replace('"loc(keep)"', "")
    assert '"loc(keep)"' in out  # inside a string: untouched
    assert out.split("\n")[0].strip() == "" and out.split("\n")[6].strip() == ""
    assert out.split("\n")[2].rstrip().endswith(": i32")


def test_resource_section_is_dropped_but_lines_kept():
    text = 'module {\n} loc("m")\n{-#\n  dialect_resources: {\n    builtin: {\n      r: "0x04000000"\n    }\n  }\n#-}\n'
    out = blank_locations(text)
    assert "dialect_resources" not in out
    assert out.count("\n") == text.count("\n")


@given(st.text(alphabet='ab"() \\\n', max_size=40))
def test_blanking_never_changes_length_or_lines(s):
    text = f"x loc({s}) y"
    out = blank_locations(text)
    assert len(out) == len(text)
    assert out.count("\n") == text.count("\n")


def test_op_positions_and_ends():
    snap = ParsedSnapshot(SAMPLE, "s.mlir")
    ranges = {a.name: snap.text_range(b) for a, b in snap.walk_pairs()}
    func = ranges["func.func"]
    assert (func.start_line, func.start_col, func.end_line, func.end_col) == (2, 1, 6, 1)
    add = ranges["arith.addi"]
    assert add.slice(SAMPLE) == "arith.addi %a, %a : i32"
    assert add.start_line == 3


def test_op_end_respects_strings_and_brackets():
    text = 'a = x {s = "}\\n{"} (\n  1\n) -> i\nnext\n'
    offs = line_offsets(text)
    assert op_end(text, offs, 1, 1) == (3, 6)


def _op_end_by_chars(text: str, offs: list[int], line: int, col: int) -> tuple[int, int]:
    """Reference: the plain character-by-character scan op_end must equal."""
    i = offs[line - 1] + col - 1
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            k = i + 1
            while k < len(text) and not (text[k] == '"' and (k - len(text[:k].rstrip("\\"))) % 2 == 0):
                k += 1
            i = k + 1
            continue
        if c == "\n" and depth <= 0:
            break
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(c, 0)
        i += 1
    i = min(i, len(text))
    j = i - 1
    while j > 0 and text[j] in " \t\r":
        j -= 1
    line_no = sum(1 for o in offs if o <= j)
    return line_no, j - offs[line_no - 1] + 1


@given(st.text(alphabet='ab"(){}[] \\\n', min_size=1, max_size=60), st.data())
def test_op_end_equals_a_character_scan(text, data):
    offs = line_offsets(text)
    line = data.draw(st.integers(1, len(offs)))
    start = offs[line - 1]
    end = offs[line] - 1 if line < len(offs) else len(text)
    if end <= start:
        return
    col = data.draw(st.integers(1, end - start))
    assert op_end(text, offs, line, col) == _op_end_by_chars(text, offs, line, col)


def test_syntax_error_names_file_line_col_and_message():
    bad = SAMPLE.replace("arith.addi %a, %a", "arith.addi %a %a")
    with pytest.raises(SnapshotParseError) as info:
        ParsedSnapshot(bad, "bad.mlir")
    e = info.value
    assert (e.path, e.line) == ("bad.mlir", 3)
    assert e.col > 1
    assert "expected" in e.message
    assert str(e).startswith("bad.mlir:3:")
