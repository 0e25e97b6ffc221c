"""Line diffs of MLIR snapshots that ignore what is noise to a compiler engineer.

Locations (`loc(...)` suffixes and `#locN = loc(...)` alias lines) and the
bodies of huge constants are normalised away before comparing, so a diff
shows what a pass or an edit changed, not renumbered locations or a blob of
weights. Both can be kept on request.

Speed: two 100,000-line snapshots diff in well under a second (see
docs/PERFORMANCE.md). Lines are mapped to integer ids, the common prefix and
suffix are cut, lines unique in both texts are matched as anchors (their
longest increasing run, as patience diff does), and difflib.SequenceMatcher
only runs on the short gaps between anchors. Plain SequenceMatcher on the
whole text is several seconds.

Displayed hunks show the normalised lines; `patch_text` shows the original
lines of both texts, so the saved patch applies to the first text.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

ELIDE_OVER = 200  # constants longer than this are compared and shown by length only
# A loc(...) with up to three levels of parentheses (callsite(... at ...), fused[...]) and strings.
_STR = r'"(?:[^"\\\n]++|\\.)*+"'
_NOPAREN = r'[^()"\n]++'
_LOC = re.compile(
    r" loc\((?:{n}|{s}|\((?:{n}|{s}|\((?:{n}|{s})*+\))*+\))*+\)".format(n=_NOPAREN, s=_STR)
)
_LOC_ALIAS = re.compile(r"^#loc\d*\s*=$")  # what an alias line is once its loc(...) is gone
# Huge constants: a quoted hex blob or a long dense<[...]> list (one literal-prefixed regex each: fast).
_BIG_HEX = re.compile(r'"0x[0-9A-Fa-f]{%d,}+"' % ELIDE_OVER)
_BIG_LIST = re.compile(r'dense<\[[^<>"\n]{%d,}+\]>' % ELIDE_OVER)

Opcode = tuple[str, int, int, int, int]  # as difflib: tag, i1, i2, j1, j2


@dataclass(frozen=True)
class DiffOptions:
    locations: bool = False  # compare and show loc(...) too
    constants: bool = False  # compare and show huge constants in full


def _elide(m: re.Match) -> str:
    text = m.group()
    return f'"0x…({len(text)} chars)"' if text.startswith('"') else f"dense<[…({len(text)} chars)]>"


def normalize_text(text: str, options: DiffOptions = DiffOptions()) -> tuple[list[str], list[int]]:
    """Normalised lines and, for each, the 0-based index of the original line it came from.

    Whole-text regex passes: per-line Python work is what makes 100,000 lines slow.
    """
    if not options.locations:
        text = _LOC.sub("", text)
    if not options.constants:
        text = _BIG_LIST.sub(_elide, _BIG_HEX.sub(_elide, text))
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if options.locations:
        return lines, list(range(len(lines)))
    keep = [i for i, line in enumerate(lines) if not (line.startswith("#loc") and _LOC_ALIAS.match(line))]
    if len(keep) == len(lines):
        return lines, keep
    return [lines[i] for i in keep], keep


def _ids(a: list[str], b: list[str]) -> tuple[list[int], list[int]]:
    table: dict[str, int] = {}
    ia = [table.setdefault(x, len(table)) for x in a]
    ib = [table.setdefault(x, len(table)) for x in b]
    return ia, ib


def _unique_anchors(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """(i, j) pairs of lines occurring once in a[alo:ahi] and once in b[blo:bhi], longest increasing run."""
    count_a: dict[int, int] = {}
    for i in range(alo, ahi):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    pos_b: dict[int, int] = {}
    count_b: dict[int, int] = {}
    for j in range(blo, bhi):
        x = b[j]
        if count_a.get(x) == 1:
            count_b[x] = count_b.get(x, 0) + 1
            pos_b[x] = j
    pairs = [(i, pos_b[a[i]]) for i in range(alo, ahi) if count_b.get(a[i]) == 1]
    # Longest increasing subsequence of j (pairs are sorted by i), O(n log n).
    tails: list[int] = []
    tails_at: list[int] = []
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        t = bisect.bisect_left(tails, j)
        if t == len(tails):
            tails.append(j)
            tails_at.append(k)
        else:
            tails[t] = j
            tails_at[t] = k
        prev[k] = tails_at[t - 1] if t else -1
    run = []
    k = tails_at[-1] if tails_at else -1
    while k >= 0:
        run.append(pairs[k])
        k = prev[k]
    return run[::-1]


def _gap_blocks(a, b, alo, ahi, blo, bhi, out: list[tuple[int, int, int]]) -> None:
    """Matching blocks (i, j, n) of a gap between anchors, by difflib."""
    if alo >= ahi or blo >= bhi:
        return
    if ahi - alo == bhi - blo and a[alo:ahi] == b[blo:bhi]:  # the common case between anchors
        out.append((alo, blo, ahi - alo))
        return
    sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
    for i, j, n in sm.get_matching_blocks():
        if n:
            out.append((alo + i, blo + j, n))


def matching_blocks(a: list[int], b: list[int]) -> list[tuple[int, int, int]]:
    """Matching blocks like difflib's, ending with the (len(a), len(b), 0) sentinel."""
    blocks: list[tuple[int, int, int]] = []
    n = min(len(a), len(b))
    pre = 0
    while pre < n and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    if pre:
        blocks.append((0, 0, pre))
    alo, ahi, blo, bhi = pre, len(a) - suf, pre, len(b) - suf
    i, j = alo, blo
    for ai, bj in _unique_anchors(a, b, alo, ahi, blo, bhi):
        if ai < i or bj < j:
            continue
        _gap_blocks(a, b, i, ai, j, bj, blocks)
        blocks.append((ai, bj, 1))
        i, j = ai + 1, bj + 1
    _gap_blocks(a, b, i, ahi, j, bhi, blocks)
    if suf:
        blocks.append((ahi, bhi, suf))
    # Merge adjacent blocks so equal runs come out as one opcode.
    merged: list[tuple[int, int, int]] = []
    for blk in blocks:
        if merged and merged[-1][0] + merged[-1][2] == blk[0] and merged[-1][1] + merged[-1][2] == blk[1]:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + blk[2])
        else:
            merged.append(blk)
    merged.append((len(a), len(b), 0))
    return merged


def opcodes(a: list[int], b: list[int]) -> list[Opcode]:
    """difflib-style opcodes covering both sequences."""
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj, n in matching_blocks(a, b):
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else None
        if tag:
            codes.append((tag, i, ai, j, bj))
        if n:
            codes.append(("equal", ai, ai + n, bj, bj + n))
        i, j = ai + n, bj + n
    return codes


@dataclass
class TextDiff:
    """The diff of two texts, over their normalised lines."""

    a_name: str
    b_name: str
    a_lines: list[str]  # normalised
    b_lines: list[str]
    a_origin: list[int]  # normalised line -> original line (0-based)
    b_origin: list[int]
    a_original: list[str]
    b_original: list[str]
    codes: list[Opcode]

    @property
    def changed(self) -> bool:
        return any(tag != "equal" for tag, *_ in self.codes)

    def counts(self) -> tuple[int, int]:
        """(lines removed, lines added)."""
        removed = sum(i2 - i1 for tag, i1, i2, _, _ in self.codes if tag in ("replace", "delete"))
        added = sum(j2 - j1 for tag, _, _, j1, j2 in self.codes if tag in ("replace", "insert"))
        return removed, added

    def unified(self, context: int = 3) -> str:
        """A unified diff of the normalised lines (what the views show)."""
        return "".join(_unified(self.a_name, self.b_name, self.a_lines, self.b_lines, self.codes, context))

    def patch_text(self, context: int = 3) -> str:
        """A unified diff of the original lines that applies to the first text."""
        return "".join(_unified(self.a_name, self.b_name, self.a_original, self.b_original,
                                self._original_codes(), context))

    def _original_codes(self) -> list[Opcode]:
        """The opcodes mapped to original line numbers (dropped lines join the change next to them)."""
        def amap(i):
            return self.a_origin[i] if i < len(self.a_origin) else len(self.a_original)

        def bmap(j):
            return self.b_origin[j] if j < len(self.b_origin) else len(self.b_original)

        out: list[Opcode] = []
        for tag, i1, i2, j1, j2 in self.codes:
            if tag == "equal":
                # Equal normalised lines are equal-or-location-only; copy them from a as context.
                for k in range(i2 - i1):
                    ai, bj = self.a_origin[i1 + k], self.b_origin[j1 + k]
                    out.append(("equal", ai, ai + 1, bj, bj + 1))
            else:
                out.append((tag, amap(i1), amap(i2), bmap(j1), bmap(j2)))
        return _fill_gaps(out, len(self.a_original), len(self.b_original))

    def rows(self) -> list[tuple[int | None, int | None, str]]:
        """Side-by-side rows: (line in a, line in b, tag), 0-based normalised lines; None pads."""
        out: list[tuple[int | None, int | None, str]] = []
        for tag, i1, i2, j1, j2 in self.codes:
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                i = i1 + k if i1 + k < i2 else None
                j = j1 + k if j1 + k < j2 else None
                out.append((i, j, tag))
        return out


def _fill_gaps(codes: list[Opcode], na: int, nb: int) -> list[Opcode]:
    """Make mapped opcodes contiguous: lines skipped by normalisation become changes."""
    out: list[Opcode] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in codes + [("equal", na, na, nb, nb)]:
        if i1 > i or j1 > j:
            out.append(("replace" if i1 > i and j1 > j else "delete" if i1 > i else "insert", i, i1, j, j1))
        if i2 > i1 or j2 > j1:
            out.append((tag, i1, i2, j1, j2))
        i, j = max(i, i2), max(j, j2)
    merged: list[Opcode] = []
    for code in out:
        last = merged[-1] if merged else None
        if last and last[0] == code[0] and last[2] == code[1] and last[4] == code[3]:
            merged[-1] = (code[0], last[1], code[2], last[3], code[4])
        else:
            merged.append(code)
    return merged


def _unified(a_name, b_name, a, b, codes: list[Opcode], context: int):
    sm = difflib.SequenceMatcher(None, [], [])
    sm.get_opcodes = lambda: list(codes)  # a copy: get_grouped_opcodes trims the first and last in place
    groups = list(sm.get_grouped_opcodes(context))
    if not groups:
        return
    yield f"--- {a_name}\n+++ {b_name}\n"
    for group in groups:
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        yield f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n"
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                yield from (f" {line}\n" for line in a[a1:a2])
                continue
            yield from (f"-{line}\n" for line in a[a1:a2])
            yield from (f"+{line}\n" for line in b[b1:b2])


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def diff_texts(a: str, b: str, a_name: str = "a", b_name: str = "b",
               options: DiffOptions = DiffOptions()) -> TextDiff:
    a_orig, b_orig = a.splitlines(), b.splitlines()
    a_norm, a_origin = normalize_text(a, options)
    b_norm, b_origin = normalize_text(b, options)
    ia, ib = _ids(a_norm, b_norm)
    return TextDiff(a_name, b_name, a_norm, b_norm, a_origin, b_origin, a_orig, b_orig, opcodes(ia, ib))


def diff_files(a: Path, b: Path, options: DiffOptions = DiffOptions(),
               a_name: str | None = None, b_name: str | None = None) -> TextDiff:
    return diff_texts(Path(a).read_text(errors="replace"), Path(b).read_text(errors="replace"),
                      a_name or str(a), b_name or str(b), options)


INTRA_LINE_MAX = 4000  # characters of a line pair compared character by character (quadratic beyond)
Span = tuple[int, int]


def changed_spans(a: str, b: str) -> tuple[list[Span], list[Span]]:
    """Which characters of two paired lines (a replaced line and its replacement) differ: the
    (start, end) spans of `a` and of `b`. Lines with little in common, or too long to compare,
    are wholly changed: scattered matches of unrelated lines would only mislead."""
    whole = ([(0, len(a))] if a else [], [(0, len(b))] if b else [])
    if len(a) + len(b) > INTRA_LINE_MAX:
        return whole
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if sm.ratio() < 0.4:
        return whole
    a_spans = [(i1, i2) for tag, i1, i2, _, _ in sm.get_opcodes() if tag != "equal" and i2 > i1]
    b_spans = [(j1, j2) for tag, _, _, j1, j2 in sm.get_opcodes() if tag != "equal" and j2 > j1]
    return a_spans, b_spans
