"""What one line of MLIR text defines, uses, opens and closes: the navigation index's per-line facts.

Built from the lexer's tokens (`mlir_lexer.lex_line`), never from a parse, so it works on text that
does not parse. A line's facts depend only on its text and the lexer state it starts in, so the
index keeps them by (state, text) and an edit re-scans only the lines it changed (`LineCache`).

How a `%name` is told apart as a definition or a use (printed MLIR puts each op on its own line):
  * `%a, %b:2 = op ...` at the start of a line: results, defined in the current region;
  * `%x: type` inside a parenthesised list that follows a symbol being defined (a function's
    signature), `count`, `=` or nothing (a region's arguments on their own line): arguments of the
    region the line opens; after a block label at the start of the line (`^bb1(%x: i32):`): block
    arguments of the current region;
  * `%x = ...` anywhere else (`scf.for %i = ...`, `iter_args(%acc = %init)`), `as %x`
    (`with(%r as %arg1: ...)`) and `(%i, %j) in`/`=` (scf.forall): arguments of the region the
    line opens;
  * everything else is a use.
"""

from __future__ import annotations

import itertools
import re

from pygments.token import Name, Number, String

from .mlir_lexer import _BARE_ID, _STRING, _SUFFIX_ID, STATE_RESOURCES, STATE_ROOT, end_state, lex_line

# Event kinds (the first item of each event tuple).
DEF_HERE, DEF_NEXT, BLOCK_ARG, USE = "def", "def-next", "block-arg", "use"
LABEL_DEF, LABEL_USE = "label-def", "label-use"
OPEN, CLOSE, SYM_DEF, SYM_REF, ALIAS_DEF, ALIAS_USE = "open", "close", "sym-def", "sym-ref", "alias-def", "alias-use"
RES_DEF, RES_USE = "res-def", "res-use"

# Ops that define the symbol they name first: the last part of the op name, or the whole name.
_DEF_OP = re.compile(
    r"(?:^|\.)(?:func|executable|variant|export|module|binary|rodata|import|named_sequence|global)$"
    r"|^vm\.global\.(?:ref|i32|i64|f32|f64)$"
)
_NOT_DEF_OP = {"vm.export"}  # names a function it exports: a use
# Between a defining op's name and its symbol: `util.global private mutable @x`.
_VISIBILITY = re.compile(r"(?:\s+(?:public|private|nested|constant|mutable|immutable))*\s+")
_DENSE_RESOURCE = re.compile(r"dense_resource<([^>\s]+)>")
# Paren openers after which `%x:` declares an argument.
_ARG_LIST_OPENERS = {"sig", "label", "count", "eq", "start"}


class LineFacts:
    """The facts of one line; `events` in order of columns, each a tuple starting with its kind."""

    __slots__ = ("events", "op", "op_end", "symbol", "opens_region", "starts_statement", "alias", "state_after")

    def __init__(self):
        self.events: list[tuple] = []
        self.op: str | None = None  # the op the line starts (after its results)
        self.op_end = 0  # the column after the op's name
        self.symbol: str | None = None  # the symbol the line defines
        self.opens_region = False
        self.starts_statement = False  # a new op begins: pending region arguments are dropped
        self.alias: str | None = None  # `#name` or `!name` when the line defines an alias
        self.state_after = STATE_ROOT


def def_op(op: str | None) -> bool:
    return op is not None and op not in _NOT_DEF_OP and _DEF_OP.search(op) is not None


# One pass of `re` over a line finds the tokens the index needs, with the lexer's own patterns for
# names and strings (tests check it finds the names `lex_line` finds); numbers, shapes and types go
# by in one piece each. Several times faster than walking every token of `lex_line`.
_TOKENS = re.compile(
    "|".join((
        rf"(?P<str>{_STRING}|\"[^\"\n]*)",
        r"(?P<comment>//[^\n]*)",
        rf"(?P<value>%(?:[0-9]+|{_SUFFIX_ID})(?:#[0-9]+)?)",
        rf"(?P<label>\^{_SUFFIX_ID})",
        rf"(?P<symbol>@(?:{_SUFFIX_ID}|{_STRING}))",
        rf"(?P<alias>[#!]{_BARE_ID}(?:\.[\w$\-]+)*)",
        r"(?P<punct>::|=>|[(){}:=,])",
        r"(?P<word>\b(?:as|in|count|dense_resource)\b)",
    ))
)
# The op a line starts: a dialect op (`flow.dispatch`), a bare keyword (`module`, `return`) or a
# generic op's quoted name.
_OP = re.compile(r'[A-Za-z_][\w$]*(?:\.[\w$]+)*|"[^"\\\n]*"(?=\()')


def scan_line(line: str, state: int = STATE_ROOT) -> LineFacts:
    facts = LineFacts()
    if state == STATE_RESOURCES or "{-#" in line:
        _scan_resources(line, state, facts)
        return facts
    toks = []  # (kind, start, end, text)
    for m in _TOKENS.finditer(line):
        kind = m.lastgroup
        if kind == "str":
            continue
        if kind == "comment":
            break
        toks.append((kind, m.start(), m.end(), m.group()))
    if toks:
        _scan_tokens(line, toks, facts)
        facts.events.sort(key=lambda e: e[2])
    return facts


def _scan_resources(line: str, state: int, facts: LineFacts) -> None:
    """Blob keys of `{-# dialect_resources: { builtin: { key: "0x..." } } #-}`."""
    facts.state_after = end_state(line, state)
    spans, _ = lex_line(line[:200], state)
    for k in range(len(spans) - 2):
        (s, n, t), (s1, n1, _t1), (_s2, _n2, t2) = spans[k], spans[k + 1], spans[k + 2]
        if t is Name.Attribute and line[s1:s1 + n1] == ":" and (t2 in String or t2 in Number):
            facts.events.append((RES_DEF, line[s:s + n], s, s + n))


def _result_list(line: str, toks: list) -> int:
    """Index after the `=` of a leading result list (`%a, %b:2 =`), or 0."""
    i, n = 0, len(toks)
    if line[:toks[0][1]].strip():
        return 0  # the line starts with a word the scanner does not keep (`llvm.store %1, %2 <a = 4>`)
    while i < n and toks[i][0] == "value":
        i += 1
        if i < n and toks[i][3] == ":":  # `%0:2`: the count is a number, not among the tokens
            i += 1
        if i < n and toks[i][3] == ",":
            i += 1
            continue
        if i < n and toks[i][3] == "=" and not line[toks[i - 1][2]:toks[i][1]].strip(" \t0123456789"):
            return i + 1
        return 0
    return 0


def _forall_vars(toks: list) -> set[int]:
    """Indexes of `%i` in `(%i, %j) in` / `(%i) = (...)`: induction variables of the next region."""
    out: set[int] = set()
    for k, t in enumerate(toks):
        if t[3] != "(":
            continue
        j, names = k + 1, []
        while j < len(toks) and (toks[j][0] == "value" or toks[j][3] == ","):
            if toks[j][0] == "value":
                names.append(j)
            j += 1
        if names and j + 1 < len(toks) and toks[j][3] == ")" and toks[j + 1][3] in ("in", "="):
            out.update(names)
    return out


def _scan_tokens(line: str, toks: list, facts: LineFacts) -> None:
    events = facts.events
    first = toks[0]
    if first[1] == 0 and first[0] == "alias" and len(toks) > 1 and toks[1][3] == "=":
        facts.alias = first[3]
        facts.starts_statement = True
        events.append((ALIAS_DEF, first[3], first[1], first[2]))
        start = 2
    else:
        start = _result_list(line, toks)
        for t in toks[: max(start - 1, 0)]:
            if t[0] == "value":
                events.append((DEF_HERE, t[3].split("#")[0], t[1], t[2]))
        at = toks[start - 1][2] if start else 0
        while at < len(line) and line[at] in " \t":
            at += 1
        m = _OP.match(line, at)
        if m is not None:
            facts.op, facts.op_end = m.group(), m.end()
        if start or m is not None or first[3] == "}":
            facts.starts_statement = True
    is_def_op = def_op(facts.op)
    forall = _forall_vars(toks) if " in " in line or ") =" in line else ()
    parens: list[str] = []
    last_index = len(toks) - 1
    k = start
    while k < len(toks):
        kind, s, e, text = toks[k]
        if kind == "value":
            prev = toks[k - 1][3] if k > 0 else ""
            name = text.split("#")[0]
            # the next kept token, when only blanks stand between (`<alignment = 4>` drops a word)
            nxt = toks[k + 1][3] if k < last_index and not line[e:toks[k + 1][1]].strip() else ""
            # `%x = ...` binds %x, unless the `=` ends the line (`-> %2 =` before a region's arguments)
            if prev == "as" or (nxt == "=" and k + 1 < last_index) or k in forall:
                events.append((DEF_NEXT, name, s, e))
            elif nxt == ":" and parens and parens[-1] in _ARG_LIST_OPENERS:
                events.append((BLOCK_ARG if parens[-1] == "label" else DEF_NEXT, name, s, e))
            else:
                events.append((USE, name, s, e))
        elif kind == "punct":
            if text == "(":
                parens.append(_opener(line, toks[k - 1] if k > 0 else None, s, k, facts))
            elif text == ")":
                if parens:
                    parens.pop()
            elif text == "{":
                region = k == last_index
                facts.opens_region = facts.opens_region or region
                events.append((OPEN, region, s, e))
            elif text == "}":
                events.append((CLOSE, None, s, e))
        elif kind == "symbol":
            k = _symbol_refs(line, toks, k, is_def_op, facts)
            continue
        elif kind == "label":
            events.append((LABEL_DEF if not line[:s].strip() else LABEL_USE, text, s, e))
        elif kind == "alias":
            events.append((ALIAS_USE, text, s, e))
        elif text == "dense_resource":
            m = _DENSE_RESOURCE.match(line, s)
            if m is not None:
                events.append((RES_USE, m.group(1), m.start(1), m.end(1)))
        k += 1


def _opener(line: str, prev, at: int, k: int, facts: LineFacts) -> str:
    """What a `(` at column `at` follows: its kind decides whether `%x:` inside declares `%x`."""
    before = line[:at].rstrip()
    if not before:  # a region's arguments on a line of their own: `(%arg0: type, ...) {`
        return "start" if line.rstrip().endswith("{") else "other"
    if prev is None or prev[2] != len(before):
        return "other"  # a word the scanner does not keep (`ins`, an op name)
    if prev[0] == "symbol" and facts.symbol is not None and prev[3] == facts.symbol:
        return "sig"
    if prev[0] == "label" and not line[:prev[1]].strip():
        return "label"
    if prev[3] == "count":
        return "count"
    if prev[3] == "=":
        return "eq"
    return "other"


def _symbol_refs(line: str, toks: list, k: int, is_def_op: bool, facts: LineFacts) -> int:
    """`@a` or `@a::@b::@c` from toks[k]: a definition (the first symbol of a defining op) or
    references, one per part, each carrying the path up to it. Returns the index after it."""
    parts = [toks[k]]
    j = k + 1
    while j + 1 < len(toks) and toks[j][3] == "::" and toks[j + 1][0] == "symbol":
        parts.append(toks[j + 1])
        j += 2
    if (is_def_op and facts.symbol is None and len(parts) == 1
            and _VISIBILITY.fullmatch(line, facts.op_end, parts[0][1])):
        facts.symbol = parts[0][3]
        facts.events.append((SYM_DEF, parts[0][3], parts[0][1], parts[0][2]))
        return j
    path = tuple(p[3] for p in parts)
    for n, p in enumerate(parts):
        facts.events.append((SYM_REF, path[: n + 1], p[1], p[2]))
    return j


PAUSE_EVERY = 16  # lines between two calls of a builder's `pause` (about a millisecond of scanning)


DROP_SLICE = 20_000  # entries freed per step of drop_gradually


def drop_gradually(items: list | dict) -> None:
    """Empty `items` a slice at a time. Freeing a million entries at once is one C call that holds the
    GIL throughout (140 ms for a million-line text's alias uses), and the index is built and let go on
    threads beside the GUI's; between two slices the GUI's thread can take the GIL."""
    if isinstance(items, dict):
        while items:
            for key in list(itertools.islice(items, DROP_SLICE)):
                del items[key]
    else:
        while items:
            del items[-DROP_SLICE:]


class LineCache:
    """Facts of lines by (start state, text): re-indexing after an edit scans only new lines."""

    def __init__(self, limit: int = 400_000):
        self._facts: dict[tuple[int, str], LineFacts] = {}
        self._limit = limit
        self.scanned = 0  # lines scanned (not found here), for tests and benchmarks

    def facts(self, lines: list[str], pause=None) -> list[LineFacts]:
        """Facts of every line; `pause()`, when given, is called every PAUSE_EVERY lines (a builder on a
        thread beside a GUI waits there while the user scrolls)."""
        out = []
        cache = self._facts
        if len(cache) > self._limit:
            drop_gradually(cache)
        state = STATE_ROOT
        for n, line in enumerate(lines):
            if pause is not None and not n % PAUSE_EVERY:
                pause()
            key = (state, line)
            f = cache.get(key)
            if f is None:
                f = scan_line(line, state)
                cache[key] = f
                self.scanned += 1
            out.append(f)
            state = f.state_after
        return out
