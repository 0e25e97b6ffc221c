"""Elision for display keeps line numbers and maps columns back to the file's (hand-counted cases),
also for a line cut for its length."""

from __future__ import annotations

from npu_studio.core.ir.elision import LONG_LINE, display_to_real_col, elide_text, real_to_display_col


def test_a_long_line_of_operands_is_cut_and_its_columns_map_back():
    head = '  %big = "foo.op"('
    operands = "%a, " * (LONG_LINE // 4 + 10)
    real = head + operands + "%a) : () -> ()"
    text = "%0 = foo.bar\n" + real + "\n%2 = foo.baz"
    display, elisions = elide_text(text)
    shown = display.split("\n")
    assert len(shown) == 3 and shown[0] == "%0 = foo.bar" and shown[2] == "%2 = foo.baz"
    line = shown[1]
    assert line.startswith(head) and len(line) < 2_100
    kept = line.index("…(")
    hidden = len(real) - kept
    assert line.endswith(f"…({hidden} characters elided)")
    spans = elisions[1]
    assert display_to_real_col(10, spans) == 10  # before the cut: the same column
    assert display_to_real_col(kept, spans) == kept  # the marker: where the cut starts in the file
    assert real_to_display_col(len(real) - 3, spans) == kept  # a column in the cut part: the marker


def test_a_long_line_whose_cut_falls_in_a_constant_is_cut_before_the_constant():
    blob = '"0x' + "AB" * 150 + '"'  # a constant elided on its own
    prefix = "x" * 1_990  # the constant starts before the 2,000th column and is elided there
    real = prefix + f"dense<{blob}>" + ", %a" * (LONG_LINE // 4)
    display, elisions = elide_text(real)
    assert display.startswith(prefix + "dense<") and "bytes elided" not in display
    spans = elisions[0]
    assert len(spans) == 1 and spans[0].display_col == len(prefix) + len("dense<")
    assert display.endswith(f"…({len(real) - spans[0].real_col} characters elided)")


def test_the_quick_check_never_misses_a_long_line():
    """The window scan that spares a short-lined text the per-line pass: against line lengths counted
    one by one, it may say yes in vain but never says no to a text with a long line."""
    import random

    from npu_studio.core.ir.elision import _may_hold_a_long_line

    rng = random.Random(5)
    edges = [0, 7, LONG_LINE // 2, LONG_LINE - 1, LONG_LINE, LONG_LINE + 1, 2 * LONG_LINE]
    for _ in range(2_000):
        lengths = [rng.choice(edges + [rng.randint(0, 3 * LONG_LINE)]) for _ in range(rng.randint(1, 6))]
        text = "\n".join("x" * n for n in lengths)
        if max(lengths) > LONG_LINE:
            assert _may_hold_a_long_line(text), lengths
    assert not _may_hold_a_long_line("\n".join(["short line"] * 50_000))
