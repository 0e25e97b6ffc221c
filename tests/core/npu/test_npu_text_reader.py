"""The fast reader of printed NPU MLIR gives exactly what MLIR's parser and the
bindings give (npu_dialect._read), and leaves every other text to them."""

from __future__ import annotations

import re

import pytest

from npu_studio.core.npu.program import npu_dialect, npu_text_reader
from npu_studio.core.npu.program.npu_dialect import NpuDialectError, from_mlir, parse_module, to_mlir
from npu_studio.core.npu.plan.passes import run_npu_pipeline


def through_mlir(text: str):
    head, ops = npu_dialect._read(parse_module(text))
    return head, [(o.name, o.attrs, o.steps, o.deps) for o in ops]


@pytest.fixture(scope="module")
def programs(example_flow, default_target, tiny_f32_target):
    return [run_npu_pipeline(example_flow, t) for t in (default_target, tiny_f32_target)]


def test_printed_programs_read_the_same_as_through_mlir(programs):
    for p in programs:
        text = to_mlir(p)
        fast = npu_text_reader.read(text)
        assert fast is not None, "the printed form must take the fast path"
        assert fast == through_mlir(text)
        assert from_mlir(text) == p


def edits(text: str) -> dict[str, str]:
    """Hand edits a user could make: each still parses with MLIR."""
    last = text.count('= "npu.') - 1
    return {
        "cycle": text.replace('%t0 = "npu.conv"() ({', f'%t0 = "npu.conv"(%t{last}) ({{', 1)
                     .replace(": () -> !npu.token", ": (!npu.token) -> !npu.token", 1),
        "bad direction": text.replace('direction = "in"', 'direction = "sideways"', 1),
        "missing attribute": re.sub(r"dispatch = 0 : i64, ", "", text, count=1),
        "punctuation in strings": text.replace('reason = ""', 'reason = "a = b: {c}, [d] // e"', 1),
        "untyped integer": text.replace("npu.sram_peak = ", "npu.sram_peak = 0, npu.x = ", 1),
        "other whitespace": text.replace("\n  ", "\n\t    ").replace("\n", "\n\n"),
        "unknown op": text.replace('"npu.buffer"()', '"npu.mystery"()', 1),
        "string task id": text.replace("{id = 0 : i64", '{id = "zero"', 1),
    }


def test_edited_texts_read_the_same_as_through_mlir(programs):
    text = to_mlir(programs[0])
    for name, edited in edits(text).items():
        fast = npu_text_reader.read(edited)
        if name == "punctuation in strings":  # "//" inside a string: left to MLIR, which is right too
            assert fast is None
            continue
        assert fast is not None, name
        assert fast == through_mlir(edited), name


def left_to_mlir(text: str) -> dict[str, str]:
    """Texts outside the printed form: the fast reader declines, MLIR decides."""
    return {
        "comment": text.replace("\n", "\n// a note\n", 1),
        "float": text.replace("npu.sram_peak = ", "npu.scale = 1.5, npu.sram_peak = ", 1),
        "other integer type": re.sub(r"bytes = (\d+) : i64\}", r"bytes = \1 : i32}", text, count=1),
        "escape in a string": text.replace('reason = ""', 'reason = "caf\\C3\\A9"', 1),
        "quoted key": text.replace("{index = ", '{"index" = ', 1),
        "duplicate key": text.replace("{index = 0 : i64", "{index = 0 : i64, index = 1 : i64", 1),
        "undefined value": text.replace('%t2 = "npu.conv"(%t0)', '%t2 = "npu.conv"(%t999999)', 1),
        "self reference": text.replace('%t2 = "npu.conv"(%t0)', '%t2 = "npu.conv"(%t2)', 1),
        "location": text.replace(" : () -> ()\n", ' : () -> () loc("x")\n', 1),
        "unit attribute": text.replace("{index = 0 : i64", "{index = 0 : i64, flag", 1),
        "huge integer": text.replace("npu.sram_peak = ", "npu.sram_peak = 99999999999999999999, x = ", 1),
        "module attribute without a dialect": text.replace("npu.sram_peak = ", "sram_peak = 0, npu.y = ", 1),
        "named module": text.replace("module attributes", "module @m attributes", 1),
        "truncated": text[: len(text) // 2],
        "builtin op": text.replace('"npu.buffer"()', '"arith.constant"()', 1),
    }


def test_other_texts_are_left_to_mlir(programs):
    text = to_mlir(programs[0])
    assert '%t2 = "npu.conv"(%t0)' in text and re.search(r"bytes = \d+ : i64\}", text)
    for name, other in left_to_mlir(text).items():
        assert other != text, name
        assert npu_text_reader.read(other) is None, name
        try:
            through_mlir(other)  # MLIR reads it or says why not, as it did before the fast reader
        except NpuDialectError:
            with pytest.raises(NpuDialectError):
                from_mlir(other)
