"""A big text comes into the IR view a slice at a time (ui/ir/streaming.py): once in, it is the text,
with its elisions, folds, colours states, and every place asked for before its line arrived.

The truths are the text itself (its lines, where each `#loc` run and the resource section are, counted
by hand below) and the lexer carried line to line for the start states.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from npu_studio.ui.ir.ir_view import Region  # noqa: E402
from npu_studio.ui.ir.streaming import FIRST_LINES, SLICE_LINES, STREAM_OVER_LINES  # noqa: E402
from tests.ui.test_ir_navigation import shown_navigable  # noqa: E402

BLOB = "0x" + "AB" * 150  # 302 characters: over the elision threshold
FIRST_RUN = (FIRST_LINES - 10, FIRST_LINES + 10)  # a #loc run across the first slice's end
SECOND_RUN = (FIRST_LINES + SLICE_LINES - 5, FIRST_LINES + SLICE_LINES + 5)  # across the next slice's end
CODE_END = FIRST_LINES + 4 * SLICE_LINES - 3  # the resource section goes on across a slice's end
END_RUN = 500


def code_line(n: int) -> str:
    if n % 1000 == 0:
        return f'  %c{n} = arith.constant dense<"{BLOB}"> : tensor<150xi8> loc(#loc1) // after {n}'
    return f"  %v{n} = arith.addf %a, %b : f32 loc(#loc1)"


def big_text() -> tuple[str, dict]:
    lines: list[str] = []
    for n in range(1, CODE_END + 1):
        in_run = any(a <= n <= b for a, b in (FIRST_RUN, SECOND_RUN))
        lines.append(f'#loc{n} = loc("node{n}")' if in_run else code_line(n))
    resources = len(lines) + 1
    lines += ["{-#", "  dialect_resources: {", "    builtin: {", f'      r: "{BLOB}"', "    }", "  }", "#-}"]
    end_run = len(lines) + 1
    lines += [f'#loc{9_000_000 + i} = loc("tail{i}")' for i in range(END_RUN)]
    where = {"resources": (resources, resources + 6), "end_run": (end_run, len(lines)), "lines": len(lines)}
    return "\n".join(lines) + "\n", where


@pytest.fixture
def big(qtbot, monkeypatch):
    from npu_studio.ui.ir import streaming

    # Slices of SLICE_LINES each (not sized by the time they take): the runs and the section below
    # are placed across their ends.
    monkeypatch.setattr(streaming, "MIN_SLICE_LINES", SLICE_LINES)
    monkeypatch.setattr(streaming, "MAX_SLICE_LINES", SLICE_LINES)
    text, where = big_text()
    assert where["lines"] > STREAM_OVER_LINES
    widget, (view, navigator, outline, uses) = shown_navigable_unindexed(qtbot)
    yield view, navigator, text, where
    widget.close()


def shown_navigable_unindexed(qtbot):
    widget, parts = shown_navigable(qtbot, "%0 = foo.bar\n")
    return widget, parts


def loaded(qtbot, view) -> None:
    qtbot.waitUntil(lambda: not view.stream.loading, timeout=30_000)


def test_the_first_lines_show_at_once_and_the_rest_follows_to_the_same_text(big, qtbot):
    view, _, text, where = big
    view.set_text(text)
    assert view.document().blockCount() == FIRST_LINES  # shown before the rest is in
    assert view.text() == text
    loaded(qtbot, view)
    shown = view.document().toPlainText().split("\n")
    real = text.split("\n")
    assert len(shown) == len(real) == where["lines"] + 1  # the text ends in a newline: one empty line
    for n, (a, b) in enumerate(zip(shown, real), start=1):
        if BLOB in b:  # elided for display, wherever its slice was
            assert "bytes elided)" in a and BLOB not in a, n
            assert a.endswith(b[b.index('"', b.index(BLOB)):]), n  # what follows the constant stays
        else:
            assert a == b, n
    assert not view.document().isUndoAvailable()  # appending is not an edit


def test_the_gutter_is_sized_for_the_whole_text_from_the_start(big, qtbot):
    """A width change relays the whole document out: the first 2,000 lines (4 digits) of a 34,000-line
    text (5 digits) must not size the gutter for 4 digits, then again for 5 as the lines come in."""
    view, _, text, where = big
    margins = []
    view.blockCountChanged.connect(lambda _count: margins.append(view.viewportMargins().left()))
    view.set_text(text)
    first = view.viewportMargins().left()
    loaded(qtbot, view)
    assert first == view.gutter_width(lines=where["lines"] + 1) > view.gutter_width(lines=FIRST_LINES)
    assert set(margins) == {first}


def test_a_column_after_an_elided_constant_maps_to_the_file_in_a_late_slice(big, qtbot):
    view, _, text, _ = big
    view.set_text(text)
    loaded(qtbot, view)
    n = 25_000  # a constant far past the first slice
    real = text.split("\n")[n - 1]
    block = view.document().findBlockByNumber(n - 1)
    cursor = QtGui.QTextCursor(block)
    cursor.setPosition(block.position() + block.text().index("// after"))
    assert view.file_position(cursor) == (n, real.index("// after"))


def test_a_place_asked_for_before_its_line_arrives_is_reached_when_it_does(big, qtbot):
    view, _, text, where = big
    view.set_text(text)
    target = where["resources"][0] - 3
    view.goto(target, 3)
    loaded(qtbot, view)
    qtbot.wait(20)
    assert view.textCursor().blockNumber() + 1 == target
    first, last = view.visible_line_range()
    assert first <= target <= last


def test_a_region_marked_before_its_lines_arrive_is_scrolled_to(big, qtbot):
    view, _, text, _ = big
    view.set_text(text)
    view.set_regions([Region("far", 20_001, 20_040)])
    view.mark_region("far")
    loaded(qtbot, view)
    qtbot.wait(20)
    first, last = view.visible_line_range()
    assert first <= 20_001 and 20_040 <= last


def test_default_folds_reach_the_late_lines_and_runs_across_slices_fold_whole(big, qtbot):
    view, navigator, text, where = big
    view.set_text(text)
    loaded(qtbot, view)
    folding, doc = navigator.folding, view.document()
    ranges = {(r.start_line, r.end_line) for r in folding.ranges()}
    for a, b in (FIRST_RUN, SECOND_RUN, where["end_run"]):
        assert (a, b) in ranges
        assert folding.is_folded(a)
        assert doc.findBlockByNumber(a - 1).isVisible()  # the header line stays
        hidden = [n for n in range(a + 1, b + 1) if not doc.findBlockByNumber(n - 1).isVisible()]
        assert hidden == list(range(a + 1, b + 1)), (a, b)
    start, end = where["resources"]  # `{-#` .. `#-}`, across a slice's end
    assert (start, end - 1) in ranges and folding.is_folded(start)
    assert [doc.findBlockByNumber(n - 1).isVisible() for n in range(start, end + 1)] == [True] + [False] * 5 + [True]
    visible_code = [n for n in range(1, CODE_END + 1)
                    if not any(a < n <= b for a, b in (FIRST_RUN, SECOND_RUN))]
    assert all(doc.findBlockByNumber(n - 1).isVisible() for n in visible_code[::97])


def test_a_run_unfolded_by_the_user_stays_unfolded_as_it_grows(big, qtbot):
    view, navigator, text, _ = big
    view.set_text(text)
    folding = navigator.folding
    a, b = FIRST_RUN
    assert folding.is_folded(a)  # its first part is in the first slice
    folding.unfold(a)
    loaded(qtbot, view)
    assert not folding.is_folded(a)
    doc = view.document()
    assert all(doc.findBlockByNumber(n - 1).isVisible() for n in range(a, b + 1))


def test_colour_states_of_late_lines_follow_the_lexer(big, qtbot):
    from npu_studio.core.ir.mlir_lexer import STATE_ROOT, lex_line

    view, _, text, where = big
    view.set_text(text)
    loaded(qtbot, view)
    expected, state = [], STATE_ROOT
    for line in view.document().toPlainText().split("\n"):
        expected.append(state)
        state = lex_line(line, state)[1]
    states = view.highlighter._states
    assert states is not None and len(states) == len(expected)
    start, end = where["resources"]
    assert states[start - 1: end + 2] == expected[start - 1: end + 2]
    assert states == expected


def test_editing_and_finding_see_the_whole_text_at_once(big, qtbot):
    view, _, text, _ = big
    view.set_text(text)
    bar_text = f'"node{SECOND_RUN[1]}"'  # in the second #loc run, past the first slice
    from npu_studio.ui.ir.find_bar import FindBar

    bar = FindBar(view)
    bar.field.blockSignals(True)
    bar.field.setText(bar_text)
    bar.field.blockSignals(False)
    assert bar.match_count() == text.count(bar_text) == 1
    view.set_text(text)  # again, and edit before it is in
    view.set_editable(True)
    assert view.toPlainText() == text
    assert not view.stream.loading


def test_another_text_mid_load_replaces_it_whole(big, qtbot):
    view, _, text, _ = big
    view.set_text(text)
    qtbot.wait(5)
    other = "\n".join(f"  %w{n} = arith.mulf %a, %b : f32" for n in range(STREAM_OVER_LINES + 5))
    view.set_text(other)
    loaded(qtbot, view)
    assert view.document().toPlainText() == other
    view.set_text("%0 = foo.bar")
    qtbot.wait(20)
    assert view.document().toPlainText() == "%0 = foo.bar"


def test_slices_shrink_on_a_busy_machine_and_grow_on_an_idle_one(qtbot, monkeypatch):
    """A slice is sized to take SLICE_MS: one that took four times that is followed by one a quarter
    as long (hand-computed from the clock readings given), within the bounds."""
    from npu_studio.ui.ir import streaming
    from npu_studio.ui.ir.ir_view import IrView

    view = IrView()
    qtbot.addWidget(view)
    clock = iter([0.0, 4 * streaming.SLICE_MS / 1000,  # the first later slice: 4 x SLICE_MS
                  10.0, 10.0 + streaming.SLICE_MS / 4000])  # the next: a quarter of SLICE_MS
    monkeypatch.setattr(streaming, "_clock", lambda: next(clock))
    view.set_text("\n".join(f"%v{n} = foo.bar" for n in range(STREAM_OVER_LINES * 3)))
    view.stream._timer.stop()  # steps driven here, one at a time
    view.stream._step()
    view.stream._timer.stop()
    assert view.stream._slice == SLICE_LINES // 4
    view.stream._step()
    view.stream._timer.stop()
    assert view.stream._slice == min(streaming.MAX_SLICE_LINES, SLICE_LINES // 4 * 4)
