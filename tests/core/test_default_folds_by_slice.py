"""The default folds of a text given a slice at a time (as a big text reaches the IR view) are those of
the whole text: a run of `#loc` aliases or a resource section cut by a slice's end folds whole.

The truth is the scan of the whole text, itself checked against the navigation index's folds on real
snapshots (tests/core/test_nav_index.py), and hand-counted cases here.
"""

from __future__ import annotations

import random

import pytest

from npu_studio.core.ir.default_folds import FoldsBySlice, default_folds
from npu_studio.core.ir.nav_index import FoldRange

PIECES = ['#loc{n} = loc("a{n}")', "  %{n} = arith.addf %a, %b : f32", "{{-#", "  dialect_resources: {{",
          '      r{n}: "0x0102"', "#-}}", "", "}}"]


def sliced(text: str, cuts: list[int]) -> list[FoldRange]:
    """The folds FoldsBySlice gives for `text` cut after the given line counts, later ones replacing
    earlier ones with the same first line (as the view's folding takes them)."""
    lines = text.split("\n")
    by_start: dict[int, FoldRange] = {}
    folds, at = FoldsBySlice(), 0
    for end in [*cuts, len(lines)]:
        for f in folds.add("\n".join(lines[at:end])):
            by_start[f.start_line] = f
        at = end
    return sorted(by_start.values(), key=lambda f: f.start_line)


def test_hand_counted_runs_and_a_section_across_cuts():
    lines = ["module {"] + [f'#loc{n} = loc("x")' for n in range(2, 7)] + ["  %0 = foo", "{-#", "  r: 1",
                                                                             "  s: 2", "#-}", "#loc9 = loc(y)"]
    text = "\n".join(lines)  # aliases on lines 2..6, the section on 8..11, a lone alias on 12
    want = [FoldRange(2, 6, "locations", True), FoldRange(8, 10, "resources", True)]
    assert default_folds(text) == want
    for cuts in ([2], [3], [5], [6], [2, 3, 4, 5], [8], [9], [10], [8, 9, 10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]):
        assert sliced(text, cuts) == want, cuts


@pytest.mark.parametrize("seed", range(300))
def test_any_slicing_gives_the_whole_text_s_folds(seed):
    rng = random.Random(seed)
    lines = [rng.choice(PIECES).format(n=n) for n in range(rng.randint(1, 60))]
    text = "\n".join(lines)
    count = len(lines)
    cuts = sorted(rng.sample(range(1, count), rng.randint(0, min(8, count - 1)))) if count > 1 else []
    assert sliced(text, cuts) == default_folds(text), (lines, cuts)
