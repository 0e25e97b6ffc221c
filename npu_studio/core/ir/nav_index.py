"""A navigation index of MLIR text: definitions and uses, an outline and foldable ranges (no Qt).

Built from the lexer's tokens line by line (`nav_scan`), never from a parse: text the user is
editing, or a snapshot that does not parse, is indexed all the same. What it knows:

  * SSA values and block labels, scoped per region: `%0` in two functions are two values; a use
    resolves to the innermost enclosing region that defines the name, wherever in that region the
    definition stands (a use may come first, in a later block);
  * symbols (`@func`, `@executable::@variant::@export`), in nested symbol tables: a reference
    resolves from the innermost table outwards;
  * attribute and type aliases (`#loc12`, `#map3`, `!type`), uses inside `loc(...)` included;
  * `dense_resource<key>` blobs and their lines in the `{-# dialect_resources ... #-}` section;
  * an outline (executables, variants, exports, functions, dispatch regions and dispatch sites)
    and foldable ranges (regions; runs of `#loc` aliases and the resource section folded by default).

`build(text, cache)` re-scans only the lines a `LineCache` has not seen: after an edit, only the
edited lines are lexed again; the linking pass over the line facts is cheap (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import NamedTuple

from . import nav_scan as S

DISPATCH_REGION_OPS = {"flow.dispatch.workgroups", "flow.dispatch.region"}
DISPATCH_SITE_OPS = {"flow.dispatch", "stream.async.dispatch", "stream.cmd.dispatch", "hal.command_buffer.dispatch"}


class Span(NamedTuple):
    """Where a name stands: 1-based line, 0-based columns [col, end) of the file's text."""

    line: int
    col: int
    end: int


@dataclass
class Entity:
    kind: str  # "value", "label", "symbol", "alias", "resource"
    name: str  # as written: %0, ^bb1, @a::@b, #loc12, a blob's key
    definition: Span | None  # None: used but defined nowhere (broken or partial text)
    role: str = ""  # values: "result", "argument", "block argument"
    uses: list[Span] = field(default_factory=list)


@dataclass(frozen=True)
class OutlineItem:
    kind: str  # "executable", "variant", "export", "function", "module", "initializer", "dispatch region", "dispatch"
    name: str
    start_line: int
    end_line: int
    depth: int


@dataclass(frozen=True)
class FoldRange:
    """Lines start_line+1..end_line can be hidden under start_line."""

    start_line: int
    end_line: int
    kind: str  # "region", "locations", "resources"
    folded_by_default: bool


_ROLES = {S.DEF_HERE: ("value", "result"), S.BLOCK_ARG: ("value", "block argument"), S.LABEL_DEF: ("label", "block")}
_OUTLINE_KIND = (("executable", "executable"), ("variant", "variant"), ("export", "export"),
                 ("func", "function"), ("module", "module"))


def _outline_kind(facts: S.LineFacts) -> str | None:
    op = facts.op or ""
    if op in DISPATCH_REGION_OPS:
        return "dispatch region"
    if op in DISPATCH_SITE_OPS:
        return "dispatch"
    if op == "util.initializer":
        return "initializer"
    if facts.symbol is not None and S.def_op(op):
        for suffix, kind in _OUTLINE_KIND:
            if op.endswith(suffix):
                return kind
    return None


class _Region:
    __slots__ = ("region", "defs", "uses", "line", "table", "outline", "parent")

    def __init__(self, region: bool, line: int, table, parent):
        self.region, self.line, self.table, self.parent = region, line, table, parent
        self.defs: dict[str, int] = {}
        self.uses: list[tuple[str, Span]] = []
        self.outline: int | None = None


class NavIndex:
    def __init__(self, lines: list[str], facts: list[S.LineFacts], pause=None):
        self.lines = lines
        self.facts = facts
        self.entities: list[Entity] = []
        self.outline: list[OutlineItem] = []
        self.folds: list[FoldRange] = []
        self.region_end: dict[int, int] = {}  # line opening a region -> line closing it
        # Per line: [(col, end, entity)], unsorted (a few per line). No sort of the whole list: one long
        # C call would hold the GIL, and the index is built on a thread beside the GUI's.
        self._occ: dict[int, list[tuple[int, int, int]]] = {}
        self._outline_starts: list[int] = []  # start line of each outline item, for outline_at's bisect
        self._outline_parents: list[int] = []  # position of each item's parent, -1 at the top
        self._link(pause)
        # Made here, on the builder's thread: a million-line text has 200,000 folds, whose dict took
        # the GUI thread 150 ms (an IR view takes its folds by first line).
        self.folds_by_start: dict[int, FoldRange] = {f.start_line: f for f in self.folds}

    def release_gradually(self) -> None:
        """Empty this index a slice at a time (S.drop_gradually): a million-line text's index, let go at
        once, held the GIL a second. Only for an index nothing else uses any more."""
        for items in (self._occ, self.entities, self.facts, self.lines, self.outline, self.folds,
                      self.folds_by_start, self.region_end, self._outline_starts, self._outline_parents):
            S.drop_gradually(items)

    # -- queries ------------------------------------------------------------------------------

    def entity_at(self, line: int, col: int) -> Entity | None:
        """What the name at 1-based `line`, 0-based `col` of the file's text is (None: no name)."""
        for start, end, eid in self._occ.get(line, ()):
            if start <= col < end:
                return self.entities[eid]
        return None

    def occurrences(self, line: int) -> list[tuple[int, int, Entity]]:
        """(col, end, entity) of every indexed name on `line`."""
        return sorted((c, e, self.entities[i]) for c, e, i in self._occ.get(line, ()))

    def outline_at(self, line: int) -> OutlineItem | None:
        """The innermost outline item whose lines hold `line`: the last item starting at or before it,
        or the nearest of its parents still open there (items nest as their regions do). O(log n): it
        runs on every cursor move, and a million-line snapshot has over 100,000 items."""
        i = bisect.bisect_right(self._outline_starts, line) - 1
        while i >= 0:
            item = self.outline[i]
            if item.end_line >= line:
                return item
            i = self._outline_parents[i]
        return None

    def symbols(self) -> list[Entity]:
        return [e for e in self.entities if e.kind == "symbol"]

    # -- building ------------------------------------------------------------------------------

    def _entity(self, kind: str, name: str, span: Span | None, role: str = "") -> int:
        self.entities.append(Entity(kind, name, span, role))
        eid = len(self.entities) - 1
        if span is not None:
            self._occ.setdefault(span.line, []).append((span.col, span.end, eid))
        return eid

    def _use(self, eid: int, span: Span) -> None:
        self.entities[eid].uses.append(span)
        self._occ.setdefault(span.line, []).append((span.col, span.end, eid))

    def _link(self, pause) -> None:
        root = _Region(True, 0, None, None)
        stack = [root]
        scope = root  # innermost region frame
        pending: list[tuple[str, Span]] = []  # arguments of the region the statement opens
        symbols: dict[tuple, int] = {}  # (table path, name) -> entity
        sym_refs: list[tuple[tuple, tuple, Span]] = []
        aliases: dict[str, int] = {}
        alias_uses: list[tuple[str, Span]] = []
        resources: dict[str, int] = {}
        res_uses: list[tuple[str, Span]] = []
        open_outline: list[int] = []
        loc_run: list[int] = []
        resource_start = None
        for lineno, f in enumerate(self.facts, 1):
            if pause is not None and not lineno % S.PAUSE_EVERY:
                pause()
            if f.starts_statement:
                pending = []
            if f.alias is not None and f.alias.startswith("#loc"):
                loc_run.append(lineno)
            elif loc_run and self.lines[lineno - 1].strip():
                self._fold_run(loc_run)
                loc_run = []
            if f.state_after == S.STATE_RESOURCES and resource_start is None:
                resource_start = lineno
            elif f.state_after == S.STATE_ROOT and resource_start is not None:
                if lineno - 1 > resource_start:
                    self.folds.append(FoldRange(resource_start, lineno - 1, "resources", True))
                resource_start = None
            kind = _outline_kind(f)
            if kind is not None and not f.opens_region:
                self._add_outline(kind, f, lineno, lineno, len(open_outline))
            for ev in f.events:
                what, name, col, end = ev
                span = Span(lineno, col, end)
                if what is S.USE or what is S.LABEL_USE:
                    scope.uses.append((name, span))
                elif what is S.DEF_HERE or what is S.BLOCK_ARG or what is S.LABEL_DEF:
                    kind_role = _ROLES[what]
                    scope.defs[name] = self._entity(kind_role[0], name, span, kind_role[1])
                elif what is S.DEF_NEXT:
                    pending.append((name, span))
                elif what is S.OPEN:
                    table = f.symbol if name and f.symbol else (f"module:{lineno}" if name and f.op in (
                        "module", "builtin.module") else None)
                    frame = _Region(name, lineno, table, scope)
                    if name:
                        for arg, arg_span in pending:
                            frame.defs[arg] = self._entity("value", arg, arg_span, "argument")
                        pending = []
                        if kind is not None and self._add_outline(kind, f, lineno, lineno, len(open_outline)):
                            frame.outline = len(self.outline) - 1
                            open_outline.append(frame.outline)
                        scope = frame
                    stack.append(frame)
                elif what is S.CLOSE:
                    if len(stack) > 1:
                        scope = self._close(stack.pop(), lineno, open_outline) or scope
                elif what is S.SYM_DEF:
                    path = tuple(fr.table for fr in stack if fr.table is not None)
                    symbols[(path, name)] = self._entity("symbol", name, span)
                elif what is S.SYM_REF:
                    sym_refs.append((tuple(fr.table for fr in stack if fr.table is not None), name, span))
                elif what is S.ALIAS_DEF:
                    aliases[name] = self._entity("alias", name, span)
                elif what is S.ALIAS_USE:
                    alias_uses.append((name, span))
                elif what is S.RES_DEF:
                    resources[name] = self._entity("resource", name, span)
                elif what is S.RES_USE:
                    res_uses.append((name, span))
        last = len(self.facts)
        while len(stack) > 1:  # unclosed regions (text being edited): they end at the last line
            scope = self._close(stack.pop(), last, open_outline) or scope
        self._close(root, last, open_outline)
        if loc_run:
            self._fold_run(loc_run)
        if resource_start is not None and last > resource_start:
            self.folds.append(FoldRange(resource_start, last, "resources", True))
        self._link_symbols(symbols, sym_refs)
        for names, found in ((aliases, alias_uses), (resources, res_uses)):
            for name, span in found:
                if name in names:
                    self._use(names[name], span)
        # One sort is one C call holding the GIL beside the GUI's thread: integer keys, not tuples (a
        # million-line text's 200,000 folds sorted by tuples stalled the window 280 ms; by integers, 20).
        self.outline.sort(key=lambda o: (o.start_line << 10) + o.depth)  # depth < 1024
        self._outline_starts = [o.start_line for o in self.outline]
        self._outline_parents = _parents(self.outline)
        self.folds.sort(key=lambda r: (r.start_line << 32) - r.end_line)  # end_line < 2**32
        for temporary in (alias_uses, res_uses, sym_refs, symbols):  # not freed at once on return
            S.drop_gradually(temporary)

    def _close(self, frame: _Region, lineno: int, open_outline: list[int]) -> _Region | None:
        """Resolve the uses of a closing frame; the rest go to the enclosing region."""
        if not frame.region:
            if frame.parent is not None:
                return None
        defs, parent = frame.defs, frame.parent
        unresolved: dict[str, int] = {}
        for name, span in frame.uses:
            eid = defs.get(name)
            if eid is not None:
                self._use(eid, span)
            elif parent is not None:
                parent.uses.append((name, span))
            else:  # used, defined nowhere: one entity per name, without a definition
                if name not in unresolved:
                    unresolved[name] = self._entity("label" if name[0] == "^" else "value", name, None)
                self._use(unresolved[name], span)
        frame.uses = []
        if frame.region and frame.parent is not None:
            self.region_end[frame.line] = lineno
            if lineno - 1 > frame.line:
                self.folds.append(FoldRange(frame.line, lineno - 1, "region", False))
            if frame.outline is not None:
                item = self.outline[frame.outline]
                self.outline[frame.outline] = OutlineItem(item.kind, item.name, item.start_line, lineno, item.depth)
                if open_outline and open_outline[-1] == frame.outline:
                    open_outline.pop()
        return parent

    def _add_outline(self, kind: str, f: S.LineFacts, start: int, end: int, depth: int) -> bool:
        if kind in ("dispatch region", "dispatch"):
            refs = [ev[1] for ev in f.events if ev[0] is S.SYM_REF]
            results = [ev[1] for ev in f.events if ev[0] is S.DEF_HERE]
            target = "::".join(max(refs, key=len)) if refs else ""
            name = " ".join(x for x in (", ".join(results), f.op, target) if x)
        elif kind == "module" and f.symbol is None:
            return False
        else:
            name = f.symbol or f.op or kind
        self.outline.append(OutlineItem(kind, name, start, end, depth))
        return True

    def _fold_run(self, run: list[int]) -> None:
        if len(run) >= 2:
            self.folds.append(FoldRange(run[0], run[-1], "locations", True))

    def _link_symbols(self, symbols: dict, refs: list) -> None:
        for path, parts, span in refs:
            eid = self._resolve_symbol(symbols, path, parts)
            if eid is not None:
                self._use(eid, span)

    @staticmethod
    def _resolve_symbol(symbols: dict, path: tuple, parts: tuple) -> int | None:
        """`@a::@b` seen inside tables `path`: @a in the innermost table that has it, then @b in @a."""
        for k in range(len(path), -1, -1):
            base = path[:k]
            if (base, parts[0]) not in symbols:
                continue
            eid = symbols[(base, parts[0])]
            for n in range(1, len(parts)):
                base = base + (parts[n - 1],)
                eid = NavIndex._nested(symbols, base, parts[n])
                if eid is None:
                    return None
            return eid
        return None

    @staticmethod
    def _nested(symbols: dict, base: tuple, name: str) -> int | None:
        """`name` defined in the table `base` or in an anonymous module directly inside it."""
        eid = symbols.get((base, name))
        if eid is not None:
            return eid
        for (path, sym), found in symbols.items():
            if sym == name and len(path) == len(base) + 1 and path[:-1] == base and path[-1].startswith("module:"):
                return found
        return None


def _parents(outline: list[OutlineItem]) -> list[int]:
    """The position of each item's parent in `outline` (the nearest earlier item one level up), -1 at the top."""
    parents: list[int] = []
    open_items: list[int] = []
    for i, item in enumerate(outline):
        del open_items[item.depth:]
        parents.append(open_items[-1] if open_items else -1)
        open_items.append(i)
    return parents


def build(text: str, cache: S.LineCache | None = None, pause=None) -> NavIndex:
    """The index of `text`; with a `cache` kept between calls, only new or changed lines are scanned.
    `pause()`, when given, is called every few lines: a builder beside a GUI waits there while it is busy."""
    lines = split_lines(text, pause)
    return NavIndex(lines, (cache or S.LineCache()).facts(lines, pause), pause)


SPLIT_CHUNK = 1 << 20  # characters split in one C call


def split_lines(text: str, pause=None) -> list[str]:
    """`text.split("\\n")`, a megabyte at a time: one split of a 160 MB snapshot held the GIL for a
    quarter of a second, a stall of the GUI beside the builder's thread; `pause()` between chunks."""
    if len(text) <= SPLIT_CHUNK:
        return text.split("\n")
    lines: list[str] = []
    start, carry = 0, ""
    while start < len(text):
        if pause is not None:
            pause()
        piece = text[start:start + SPLIT_CHUNK]
        start += SPLIT_CHUNK
        parts = piece.split("\n")
        parts[0] = carry + parts[0]
        carry = parts.pop()  # the line running on into the next chunk
        lines.extend(parts)
    lines.append(carry)
    return lines
