"""A Pygments lexer for MLIR as IREE prints it (no Qt here).

Why not `mlir-pygments` (1.0.0)? Evaluated: it yields Error tokens on
`%0#1`, `%c-1_i32` and on the `-` in `-> (...)` results and
`dense<[-1, ...]>`, only recognises a `// comment` that ends in a newline, and
its punctuation class `[...>-\\|...]` is an accidental range that matches
capital letters. Every real IREE phase snapshot we tried had Error tokens.

Besides the usual `MlirLexer().get_tokens(text)`, `lex_line(line, state)`
lexes one line at a time with an integer state for the only multi-line
construct in printed MLIR, the `{-# dialect_resources ... #-}` section; the
syntax highlighter keeps that int per text block.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

__all__ = ["MlirLexer", "lex_line", "STATE_ROOT", "STATE_RESOURCES"]

STATE_ROOT = 0
STATE_RESOURCES = 1

_SUFFIX_ID = r"(?:[0-9]+|[A-Za-z_$.\-][\w$.\-]*)"
_BARE_ID = r"[A-Za-z_][\w$]*"
_STRING = r'"(?:\\.|[^"\\\n])*"'
_HEX_STRING = r'"0x[0-9A-Fa-f]*"'
# Element types that may follow an `x` in a shape such as `4x?xf32`.
_BUILTIN_TYPE = (
    r"(?:[su]?i[0-9]+|bf16|tf32|f(?:16|32|64|80|128)|f[468]E[0-9A-Za-z]+"
    r"|index|none|tensor|memref|vector|complex|tuple)"
)
_KEYWORDS = (
    r"(?:dense_resource|dense|sparse|affine_map|affine_set|array|distinct"
    r"|strided|opaque)"
)


class MlirLexer(RegexLexer):
    """MLIR in the textual form `iree-compile` dumps between phases."""

    name = "MLIR"
    aliases = ["mlir"]
    filenames = ["*.mlir"]

    tokens = {
        "root": [
            (r"[^\S\n]+", Whitespace),
            (r"\n", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"\{-#", Comment.Preproc, "resources"),
            (r"#-\}", Comment.Preproc),  # stray end marker: no Error token
            # loc(...) carries source locations; dimmed as a comment.
            (r"loc\(", Comment.Special, "loc"),
            # Generic op form: "dialect.op"(...)
            (r'"[^"\\\n]*"(?=\()', Name.Function),
            (_HEX_STRING, Number.Hex),
            (_STRING, String.Double),
            (r'"[^"\n]*', String.Double),  # unterminated (e.g. a capped line)
            (r"%[0-9]+(?:#[0-9]+)?", Name.Variable),
            (r"%" + _SUFFIX_ID + r"(?:#[0-9]+)?", Name.Variable),
            (r"\^" + _SUFFIX_ID, Name.Label),
            (r"@" + _SUFFIX_ID, Name.Constant),
            (r"@" + _STRING, Name.Constant),
            (r"!" + _BARE_ID + r"(?:\.[\w$]+)*", Keyword.Type),
            (r"#" + _BARE_ID + r"(?:\.[\w$\-]+)*", Name.Attribute),
            # Shape dimensions: the 4 and ? of `4x?xf32`, then the x.
            (r"0x[0-9A-Fa-f]+(?![\w?])", Number.Hex),
            (r"(?:[0-9]+|\?)(?=x(?:[0-9]|\?|" + _BUILTIN_TYPE + r"\b|!))",
             Number.Integer),
            (r"(?<=[0-9?])x", Punctuation),
            (r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?", Number.Float),
            (r"[-+]?[0-9]+[eE][-+]?[0-9]+", Number.Float),
            (r"[-+]?[0-9]+", Number.Integer),
            (_BUILTIN_TYPE + r"\b", Keyword.Type),
            (_KEYWORDS + r"\b", Keyword),
            (r"(?:true|false|unit|unknown)\b", Keyword.Constant),
            # Dotted names followed by `=` are attribute keys, others op names.
            (_BARE_ID + r"(?:\.[\w$]+)+(?=\s*=(?!=))", Name.Attribute),
            (_BARE_ID + r"(?:\.[\w$]+)+", Name.Function),
            (_BARE_ID + r"(?:-[\w$]+)*", Name),
            (r"->|::|\.\.\.", Punctuation),
            (r"[()\[\]{}<>,:=*+\-|?.&/\\;$]", Punctuation),
            (r"'[^'\n]*'?", String.Single),
        ],
        "loc": [
            (r"\(", Comment.Special, "#push"),
            (r"\)", Comment.Special, "#pop"),
            (r'(?:"(?:\\.|[^"\\\n])*"|[^()"\n]+)', Comment.Special),
            (r'"[^"\n]*', Comment.Special),
            (r"\n", Whitespace, "#pop"),
        ],
        "resources": [
            (r"#-\}", Comment.Preproc, "#pop"),
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (_HEX_STRING, Number.Hex),
            (_STRING, String.Double),
            (r'"[^"\n]*', String.Double),
            (r"[\w$.\-]+", Name.Attribute),
            (r"[{}:,]", Punctuation),
        ],
    }


def _compile_states(tokens: dict) -> dict:
    """One alternation per state: {state: (regex, [(token, new_state)])}.

    `re` tries the branches in order inside C, so this finds the same tokens
    as RegexLexer's rule-by-rule loop several times faster (the highlighter
    lexes every line that scrolls into view).
    """
    compiled = {}
    for state, rules in tokens.items():
        parts, actions = [], []
        for rule in rules:
            regex, token = rule[0], rule[1]
            parts.append(f"({regex})")
            actions.append((token, rule[2] if len(rule) > 2 else None))
        compiled[state] = (re.compile("|".join(parts)), actions)
    return compiled


_STATES = _compile_states(MlirLexer.tokens)


def lex_line(
    line: str, state: int = STATE_ROOT
) -> tuple[list[tuple[int, int, _TokenType]], int]:
    """Lex one line (without its newline) that starts in `state`.

    Returns ([(start, length, token_type), ...], state at the end of the line).
    Whitespace tokens are left out. Same tokens as MlirLexer (tested).
    """
    stack = ["root", "resources"] if state == STATE_RESOURCES else ["root"]
    spans = []
    pos, end = 0, len(line)
    regex, actions = _STATES[stack[-1]]
    while pos < end:
        m = regex.match(line, pos)
        if m is None:
            spans.append((pos, 1, Error))
            pos += 1
            continue
        token, new_state = actions[m.lastindex - 1]
        if token is not Whitespace:
            spans.append((pos, m.end() - pos, token))
        pos = m.end()
        if new_state is not None:
            if new_state == "#pop":
                if len(stack) > 1:
                    stack.pop()
            elif new_state == "#push":
                stack.append(stack[-1])
            else:
                stack.append(new_state)
            regex, actions = _STATES[stack[-1]]
    return spans, STATE_RESOURCES if "resources" in stack else STATE_ROOT


def end_state(line: str, state: int = STATE_ROOT) -> int:
    """The state after `line` without lexing it (cheap; markers only)."""
    if state == STATE_RESOURCES:
        i = line.rfind("#-}")
        if i < 0:
            return STATE_RESOURCES
        return STATE_RESOURCES if line.find("{-#", i) >= 0 else STATE_ROOT
    i = line.rfind("{-#")
    if i < 0 or line.startswith("//", len(line) - len(line.lstrip())):
        return STATE_ROOT
    return STATE_ROOT if line.find("#-}", i) >= 0 else STATE_RESOURCES
