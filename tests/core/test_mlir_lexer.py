"""MlirLexer: token types on the constructs IREE prints; real snapshots lex cleanly."""

from __future__ import annotations

import pytest
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Punctuation,
    String,
    Whitespace,
)

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.ir.mlir_lexer import (
    STATE_RESOURCES,
    STATE_ROOT,
    MlirLexer,
    end_state,
    lex_line,
)

LEXER = MlirLexer()


def toks(text: str) -> list[tuple[object, str]]:
    """(token type, value) pairs without whitespace."""
    return [
        (t, v) for _, t, v in LEXER.get_tokens_unprocessed(text) if v.strip()
    ]


def type_of(text: str, value: str):
    matches = [t for t, v in toks(text) if v == value]
    assert matches, f"{value!r} is not one token of {toks(text)}"
    return matches[0]


def test_result_number_suffix():
    assert type_of("%0#1 = foo.bar %1#0", "%0#1") is Name.Variable
    assert type_of("%0#1 = foo.bar %1#0", "%1#0") is Name.Variable


def test_ssa_names_with_dash_and_digits():
    assert type_of("%c-1 = arith.constant -1 : i32", "%c-1") is Name.Variable
    assert type_of("%c-1_i32 = x", "%c-1_i32") is Name.Variable
    assert type_of("func(%arg0: i32)", "%arg0") is Name.Variable
    assert type_of("arith.constant -1 : i32", "-1") is Number.Integer


def test_dynamic_dims_in_shapes():
    t = toks("tensor<?x3xf32>")
    assert t == [
        (Keyword.Type, "tensor"),
        (Punctuation, "<"),
        (Number.Integer, "?"),
        (Punctuation, "x"),
        (Number.Integer, "3"),
        (Punctuation, "x"),
        (Keyword.Type, "f32"),
        (Punctuation, ">"),
    ]


def test_dialect_type_with_nested_tensor():
    text = "!iree_tensor_ext.dispatch.tensor<readonly:tensor<3x500xf32>>"
    assert type_of(text, "!iree_tensor_ext.dispatch.tensor") is Keyword.Type
    assert type_of(text, "readonly") is Name
    assert type_of(text, "500") is Number.Integer
    assert Error not in {t for t, _ in toks(text)}


def test_affine_map_alias():
    text = "#map = affine_map<(d0, d1) -> (d0 + d1)>"
    assert type_of(text, "#map") is Name.Attribute
    assert type_of(text, "affine_map") is Keyword
    assert type_of(text, "->") is Punctuation


def test_symbol_with_dollar_and_nested_reference():
    text = "flow.dispatch @m$async_dispatch_0::@f$x(%1)"
    assert type_of(text, "@m$async_dispatch_0") is Name.Constant
    assert type_of(text, "@f$x") is Name.Constant
    assert type_of(text, "flow.dispatch") is Name.Function


def test_generic_op_form():
    text = '%0 = "my.op"(%a) {k = 1 : i64} : (i32) -> i32'
    assert type_of(text, '"my.op"') is Name.Function
    assert type_of(text, "i64") is Keyword.Type


def test_block_label_and_loc():
    text = '^bb0(%in: f32 loc("x"), %out: f32 loc(unknown)):'
    assert type_of(text, "^bb0") is Name.Label
    assert type_of(text, '"x"') is Comment.Special
    assert type_of(text, "loc(") is Comment.Special
    assert type_of(text, "%out") is Name.Variable


def test_hex_blob_and_dense():
    text = 'util.global private @c = dense<"0xDEADBEEF00"> : tensor<5xi8>'
    assert type_of(text, '"0xDEADBEEF00"') is Number.Hex
    assert type_of(text, "dense") is Keyword
    assert type_of("arith.constant 0xFF800000 : f32", "0xFF800000") is Number.Hex


def test_numbers():
    text = "dense<[0.000000e+00, -1, 2.5, 1e10]> : tensor<4xf32>"
    assert type_of(text, "0.000000e+00") is Number.Float
    assert type_of(text, "-1") is Number.Integer
    assert type_of(text, "2.5") is Number.Float
    assert type_of(text, "1e10") is Number.Float


def test_strings_keep_escapes():
    text = r'flags("a\22b") {s = "x\"y"}'
    assert type_of(text, r'"x\"y"') is String.Double


def test_comment_on_last_line_without_newline():
    text = "%0 = arith.constant 1 : i32\n// the end"
    assert toks(text)[-1] == (Comment.Single, "// the end")
    assert list(LEXER.get_tokens("// only"))[0] == (Comment.Single, "// only")


def test_unknown_character_is_an_error():
    # Guards the tests above: the lexer does report what it cannot lex.
    assert Error in {t for t, _ in toks("%0 = foo ` bar")}


def test_resource_section_across_lines():
    text = (
        "module {}\n{-#\n  dialect_resources: {\n    builtin: {\n"
        '      blob_1: "0x0400000001020304"\n    }\n  }\n#-}\n'
    )
    t = toks(text)
    assert (Comment.Preproc, "{-#") in t and (Comment.Preproc, "#-}") in t
    assert (Number.Hex, '"0x0400000001020304"') in t
    assert (Name.Attribute, "blob_1") in t
    assert Error not in {tt for tt, _ in t}


def test_lex_line_carries_state():
    spans, state = lex_line("{-#", STATE_ROOT)
    assert state == STATE_RESOURCES and spans == [(0, 3, Comment.Preproc)]
    spans, state = lex_line('  blob: "0xAB"', state)
    assert state == STATE_RESOURCES
    assert (8, 6, Number.Hex) in spans
    spans, state = lex_line("#-}", state)
    assert state == STATE_ROOT


@pytest.mark.parametrize(
    "line,state,expected",
    [
        ("{-#", STATE_ROOT, STATE_RESOURCES),
        ("  x: {", STATE_RESOURCES, STATE_RESOURCES),
        ("#-}", STATE_RESOURCES, STATE_ROOT),
        ("%0 = foo", STATE_ROOT, STATE_ROOT),
    ],
)
def test_end_state_matches_lexing(line, state, expected):
    assert end_state(line, state) == expected
    assert lex_line(line, state)[1] == expected


@pytest.mark.parametrize("phase", SNAPSHOT_PHASES)
def test_real_iree_snapshot_has_no_error_tokens(example_workspace, phase):
    path = example_workspace.snapshot_path(phase)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    bad = [(i, v) for i, t, v in LEXER.get_tokens_unprocessed(text) if t in Error]
    assert not bad, f"{path}: Error tokens at {bad[:5]}"
    # Line by line (as the highlighter does) gives the same tokens.
    state = STATE_ROOT
    for n, line in enumerate(text.split("\n"), 1):
        spans, new_state = lex_line(line, state)
        stack = ("root", "resources") if state == STATE_RESOURCES else ("root",)
        reference = [
            (i, len(v), t)
            for i, t, v in LEXER.get_tokens_unprocessed(line, stack)
            if t not in Whitespace
        ]
        assert spans == reference, f"{path}:{n}"
        state = new_state


def test_lex_line_matches_pygments_on_tricky_lines():
    lines = [
        '%0:2 = "a.b"(%x) {k = dense<[-1, 2]> : tensor<2xi32>} : (i32) -> (i32, i32)',
        '^bb0(%in: f32 loc(fused["a", callsite("b"("c":1:2) at "d":3:4)])):',
        "%c-1_i32 = arith.constant 0xFF800000 : f32 // tail",
        'x ` y "unterminated',
    ]
    for line in lines:
        reference = [
            (i, len(v), t)
            for i, t, v in LEXER.get_tokens_unprocessed(line)
            if t not in Whitespace
        ]
        assert lex_line(line)[0] == reference, line
