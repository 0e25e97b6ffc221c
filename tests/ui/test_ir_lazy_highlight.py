"""What IrView highlights when, and how it pages (issue 40's frame work): the colours still follow the
lexer's tokens, the pages around the view are done once it has painted, a page down then lexes
nothing before its paint, a far jump paints first and colours only where it lands, and Page Up/Down move as Qt's do."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from pygments.styles import get_style_by_name  # noqa: E402
from pygments.token import Whitespace  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from npu_studio.core.ir.mlir_lexer import MlirLexer  # noqa: E402
from npu_studio.ui.ir.ir_view import IrView  # noqa: E402
from npu_studio.ui.ir.lazy_highlight import MARGIN  # noqa: E402

# Lines as IREE prints them in a flow snapshot (every kind of token the view colours).
SNIPPET = [
    '#loc3 = loc("resnet/conv1/Conv")',
    "  flow.executable private @main_graph$async_dispatch_0 {",
    "    func.func @main_graph$async_dispatch_0_conv_2d_nchw_fchw_1x64x112x112x3x7x7_f32("
    "%arg0: !flow.dispatch.tensor<readonly:tensor<1x3x230x230xf32>>) {",
    "      %cst = arith.constant 0.000000e+00 : f32 loc(#loc3)",
    "      %0:2 = flow.dispatch.workload.ordinal %c64, 0 : index",
    '      %1 = "tosa.const"() <{value = dense<[-1, 2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>',
    "      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = [\"parallel\"]} "
    "ins(%0#1 : tensor<?x4xf32>) outs(%1 : tensor<?x4xf32>) {",
    "      ^bb0(%in: f32, %out: f32):  // no predecessors",
    "        linalg.yield %in : f32",
    "      } -> tensor<?x4xf32>",
    '  util.global private @__constant = dense_resource<__elided__> : tensor<64xf32>',
]


@pytest.fixture
def view(qtbot):
    v = IrView()
    qtbot.addWidget(v)
    v.resize(700, 400)
    v.show()
    qtbot.waitExposed(v)
    return v


def _colour_runs(doc, n):
    return sorted((r.start, r.length, r.format.foreground().color().name())
                  for r in doc.findBlockByNumber(n).layout().formats())


def test_colours_are_the_style_colours_of_the_lexers_tokens(view, qtbot):
    """Each line's coloured runs are exactly the tokens Pygments' own RegexLexer finds whose style has
    a colour, in that colour (the highlighter lexes with its own per-line lexer and caches formats)."""
    view.set_text("\n".join(SNIPPET))
    view.highlighter.ensure_highlighted(0, len(SNIPPET) - 1)
    style = get_style_by_name("default")
    for n, line in enumerate(SNIPPET):
        expected, pos = [], 0
        for ttype, value in MlirLexer().get_tokens(line + "\n"):
            colour = style.style_for_token(ttype)["color"]
            if colour and ttype is not Whitespace and value.strip("\n"):
                expected.append((pos, len(value.rstrip("\n")), "#" + colour.lower()))
            pos += len(value)
        merged = []  # QSyntaxHighlighter keeps touching runs of one format as one range
        for run in expected:
            if merged and merged[-1][0] + merged[-1][1] == run[0] and merged[-1][2] == run[2]:
                merged[-1] = (merged[-1][0], merged[-1][1] + run[1], run[2])
            else:
                merged.append(run)
        expected = merged
        assert _colour_runs(view.document(), n) == sorted(expected), line
        for r in view.document().findBlockByNumber(n).layout().formats():  # colour only: the view's font
            assert r.format.fontWeight() in (0, QtGui.QFont.Weight.Normal) and not r.format.fontItalic()


def _numbered(lines: int) -> str:
    return "\n".join(f"  %v{i} = arith.addf %a{i}, %b{i} : f32 loc(#loc{i})" for i in range(lines))


class PaintCountingView(IrView):
    """Records how many lines the highlighter had lexed when each paint ended."""

    def __init__(self):
        super().__init__()
        self.lexed_at_paint: list[int] = []

    def paintEvent(self, event):  # noqa: N802
        super().paintEvent(event)
        self.lexed_at_paint.append(self.highlighter.blocks_highlighted)


def test_pages_around_the_view_are_done_after_it_paints(qtbot):
    view = PaintCountingView()
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    qtbot.waitExposed(view)
    view.set_text(_numbered(20_000))
    view.verticalScrollBar().setValue(10_000)
    first, last = view.visible_line_range()
    page = last - first + 1
    hl = view.highlighter
    ahead = range(first - 1 - page, last - 1 + page + MARGIN)
    qtbot.waitUntil(lambda: all(hl.is_highlighted(n) for n in ahead), timeout=5000)
    qtbot.waitUntil(lambda: not view.highlighting.pending(), timeout=5000)
    assert not hl.is_highlighted(last + 2 * page + MARGIN) and not hl.is_highlighted(first - 2 * page - 2)
    # a page down now lexes nothing before it paints: the page below was done ahead, and the next
    # page's look-ahead waits for the paint (Qt repaints at low priority, after zero timers)
    before, paints = hl.blocks_highlighted, len(view.lexed_at_paint)
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: len(view.lexed_at_paint) > paints, timeout=5000)
    assert view.lexed_at_paint[paints] == before
    new_first, new_last = view.visible_line_range()
    assert new_first > last - 2 and all(hl.is_highlighted(n) for n in range(new_first - 1, new_last))


def test_a_far_jump_paints_then_colours_only_where_it_lands(qtbot):
    view = PaintCountingView()
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    qtbot.waitExposed(view)
    view.set_text(_numbered(20_000))
    first, last = view.visible_line_range()
    assert all(view.highlighter.is_highlighted(n) for n in range(first - 1, last))  # a new text: coloured at once
    qtbot.waitUntil(lambda: not view.highlighting.pending(), timeout=5000)
    hl = view.highlighter
    before, paints = hl.blocks_highlighted, len(view.lexed_at_paint)
    view.goto(15_000, 1)
    first, last = view.visible_line_range()
    assert first <= 15_000 <= last and view.textCursor().blockNumber() == 14_999
    visible = range(first - 1, last)
    qtbot.waitUntil(lambda: all(hl.is_highlighted(n) for n in visible), timeout=5000)
    qtbot.waitUntil(lambda: len(view.lexed_at_paint) >= paints + 2, timeout=5000)
    assert view.lexed_at_paint[paints] == before  # the text painted first, nothing lexed for it
    # then its lines, and nothing more, before the paint that shows the colours
    assert view.lexed_at_paint[paints + 1] - before <= len(visible) + MARGIN
    # a short move (a few lines past the screen) is coloured before its paint
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: not view.highlighting.pending(), timeout=5000)
    bar.setValue(bar.value() + 3)
    first, last = view.visible_line_range()
    assert all(hl.is_highlighted(n) for n in range(first - 1, last))


def test_page_keys_move_by_a_page_and_keep_the_cursor_on_its_screen_row(view, qtbot):
    view.set_text(_numbered(5_000))
    view.goto(2_000, 6, center=True)
    bar = view.verticalScrollBar()
    row = view.textCursor().blockNumber() - view.firstVisibleBlock().blockNumber()
    top = bar.value()
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageDown)
    assert bar.value() == top + bar.pageStep()
    cursor = view.textCursor()
    assert cursor.blockNumber() - view.firstVisibleBlock().blockNumber() == row
    assert cursor.blockNumber() == 1_999 + bar.pageStep() and cursor.positionInBlock() == 5
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageUp)
    assert bar.value() == top and view.textCursor().blockNumber() == 1_999
    # at either end the cursor goes to the start or the end of the text, as with Qt's own step
    bar.setValue(bar.maximum())
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageDown)
    assert view.textCursor().atEnd()
    bar.setValue(0)
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageUp)
    assert view.textCursor().atStart()
    # with Shift, Qt's own step extends the selection
    qtbot.keyClick(view, QtCore.Qt.Key.Key_PageDown, QtCore.Qt.KeyboardModifier.ShiftModifier)
    assert view.textCursor().hasSelection()


def test_line_start_states_match_the_lexer_carried_line_to_line():
    """The highlighter's start state of each line (a marker scan from the first `{-#` on) is the state
    the full lexer ends the line above in."""
    import random

    from npu_studio.core.ir.mlir_lexer import STATE_ROOT, lex_line
    from npu_studio.ui.ir.highlighter import _line_states

    rng = random.Random(40)
    parts = ["%0 = foo.bar", "{-#", "#-}", '  blob: "0x0102"', "  dialect_resources: {", "",
             "x {-# y #-} z", "}", "#-} {-#"]
    for _ in range(400):
        lines = [rng.choice(parts) for _ in range(rng.randint(1, 14))]
        expected, state = [], STATE_ROOT
        for line in lines:
            expected.append(state)
            state = lex_line(line, state)[1]
        states, _ = _line_states("\n".join(lines))
        assert (states or [STATE_ROOT] * len(lines)) == expected, lines
