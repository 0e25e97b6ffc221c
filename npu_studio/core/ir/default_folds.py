"""The ranges an IR view folds as soon as a text opens: runs of `#loc` aliases and the resource section.

Found by a scan of the text in milliseconds, before the navigation index (which finds the same ranges,
nav_index.FoldRange) is built. A big text reaches the view a slice at a time (ui/ir/streaming.py);
`FoldsBySlice` gives each slice's folds as if the whole text had been scanned, joining a run of aliases
or a resource section that goes on from one slice into the next.
"""

from __future__ import annotations

import re

from .nav_index import FoldRange

# After a newline: a literal prefix lets re search fast (a `^` with re.M scans a 16 MB text 5x slower).
_LOC_ALIAS_LINE = re.compile(r"\n#loc[\w$.\-]* = ")
_LOC_ALIAS_AT = re.compile(r"#loc[\w$.\-]* = ")


def default_folds(text: str) -> list[FoldRange]:
    """The default folds of `text`: every run of two or more `#loc` alias lines, every resource section."""
    return sorted(_alias_folds(text, 1) + _resource_folds(text, 1)[0], key=lambda f: f.start_line)


def _alias_folds(text: str, first_line: int) -> list[FoldRange]:
    """Runs of two or more `#loc` alias lines of `text`, whose first line is line `first_line`."""
    folds: list[FoldRange] = []
    run: list[int] = [first_line] if _LOC_ALIAS_AT.match(text) else []
    line, pos = first_line, 0
    for m in _LOC_ALIAS_LINE.finditer(text):
        line += text.count("\n", pos, m.start() + 1)
        pos = m.start() + 1
        if run and line != run[-1] + 1:
            if len(run) >= 2:
                folds.append(FoldRange(run[0], run[-1], "locations", True))
            run = []
        run.append(line)
    if len(run) >= 2:
        folds.append(FoldRange(run[0], run[-1], "locations", True))
    return folds


def _resource_folds(text: str, first_line: int, start: int = 0) -> tuple[list[FoldRange], int | None]:
    """The resource sections of `text` from offset `start` on (a line starting with `{-#`, up to the
    line before the next `#-}`), and the first line of one left open at the end (or None)."""
    folds: list[FoldRange] = []
    pos = start
    while True:
        if pos == 0 and text.startswith("{-#"):
            head = 0
        else:
            at = text.find("\n{-#", max(pos - 1, 0))
            if at < 0:
                return folds, None
            head = at + 1
        first = first_line + text.count("\n", 0, head)
        end = text.find("#-}", head)
        last = first_line + (text.count("\n", 0, end) - 1 if end >= 0 else text.count("\n"))
        if last > first:
            folds.append(FoldRange(first, last, "resources", True))
        if end < 0:
            return folds, first
        pos = end + 3


def _leading_aliases(text: str) -> int:
    """How many lines at the start of `text` are `#loc` aliases."""
    count, pos = 0, 0
    while _LOC_ALIAS_AT.match(text, pos):
        count += 1
        pos = text.find("\n", pos) + 1
        if pos == 0:
            break
    return count


def _trailing_aliases(text: str) -> int:
    """How many lines at the end of `text` are `#loc` aliases."""
    count, end = 0, len(text)
    while end >= 0:
        start = text.rfind("\n", 0, end) + 1
        if not _LOC_ALIAS_AT.match(text, start):
            break
        count += 1
        end = start - 1
    return count


class FoldsBySlice:
    """The default folds of a text given in consecutive slices of whole lines (see the module doc)."""

    def __init__(self):
        self._next_line = 1
        self._run_start: int | None = None  # first line of the alias run the slices so far end in
        self._resources: int | None = None  # first line of a resource section not closed yet

    def add(self, text: str) -> list[FoldRange]:
        """The folds of the next slice: its own, and those it extends (same first line, further end)."""
        first_line, lines = self._next_line, text.count("\n") + 1
        last_line = first_line + lines - 1
        folds = _alias_folds(text, first_line)
        lead = _leading_aliases(text)
        if self._run_start is not None and lead:
            folds = [f for f in folds if f.start_line != first_line]
            folds.append(FoldRange(self._run_start, first_line + lead - 1, "locations", True))
        trail = _trailing_aliases(text)
        if not (trail == lines and self._run_start is not None):
            self._run_start = last_line - trail + 1 if trail else None
        after = 0  # where this slice's own resource sections may begin
        if self._resources is not None:  # a section left open goes on to this slice's first `#-}`
            close = text.find("#-}")
            end = first_line + text.count("\n", 0, close) - 1 if close >= 0 else last_line
            if end > self._resources:
                folds.append(FoldRange(self._resources, end, "resources", True))
            after = close + 3 if close >= 0 else None
        if after is not None:
            sections, self._resources = _resource_folds(text, first_line, after)
            folds += sections
        self._next_line = last_line + 1
        return sorted(folds, key=lambda f: f.start_line)
