"""Navigation found wrong by using it in the real window (issue 40, fresh eyes): a Ctrl+click inside a
selection, a jump right after an edit, the uses list after an edit, the outline of a huge snapshot.

The truth is the hand-written text below: which line defines which name is counted by hand, and
which lines hold which outline items as the text is written.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import collections  # noqa: E402
import threading  # noqa: E402

import pytest  # noqa: E402
import shiboken6  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from npu_studio.ui.ir.ir_view import IrView  # noqa: E402
from npu_studio.ui.ir.outline_rows import NAME, PLACE  # noqa: E402
from .test_ir_navigation import shown_navigable  # noqa: E402

# 40 filler lines between the definition of %sum (line 5) and its use (line 46): a jump scrolls the view.
FILLER = "".join(f"    %f{i} = arith.addf %a, %b : f32\n" for i in range(40))
TEXT = (
    "#map3 = affine_map<(d0) -> (d0)>\n"                                        # 1
    "module {\n"                                                                 # 2
    "  func.func @main(%a: f32, %b: f32) -> f32 {\n"                             # 3
    "    %zero = arith.constant 0.0 : f32\n"                                     # 4
    "    %sum = arith.addf %a, %b : f32\n"                                       # 5
    + FILLER +                                                                   # 6..45
    "    %twice = arith.addf %sum, %sum : f32\n"                                 # 46
    "    return %twice : f32\n"                                                  # 47
    "  }\n"                                                                      # 48
    "}\n"                                                                        # 49
)
SUM_DEF, SUM_USE = 5, 46


@pytest.fixture
def nav(qtbot):
    widget, parts = shown_navigable(qtbot, TEXT, 900, 400)
    yield parts
    widget.close()


def place(view: IrView, line: int, col: int) -> QtCore.QPoint:
    block = view.document().findBlockByNumber(line - 1)
    cursor = QtGui.QTextCursor(block)
    cursor.setPosition(block.position() + col)
    return view.cursorRect(cursor).center()


def line_now(view: IrView) -> int:
    return view.textCursor().blockNumber() + 1


def test_ctrl_click_inside_a_selection_goes_to_the_definition(nav):
    """A double-click selects a name, or Find leaves its match selected; a Ctrl+click on it then landed
    on whatever line was under the mouse after the jump had scrolled the view (Qt's own release,
    after ours, put the cursor there)."""
    view, _, _, _ = nav
    col = TEXT.split("\n")[SUM_USE - 1].index("%sum")
    view.goto(SUM_USE, 1)
    cursor = view.textCursor()  # the whole line selected, as Find leaves a match
    cursor.movePosition(QtGui.QTextCursor.MoveOperation.EndOfBlock, QtGui.QTextCursor.MoveMode.KeepAnchor)
    view.setTextCursor(cursor)
    QTest.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.ControlModifier,
                     place(view, SUM_USE, col + 2))
    QtWidgets.QApplication.processEvents()
    assert line_now(view) == SUM_DEF


def test_a_jump_right_after_an_edit_never_lands_on_a_wrong_line(nav, qtbot):
    """Before the edited text is indexed again (250 ms, seconds on a big snapshot), F12 used the old
    index: with two lines inserted above the function, `%a` two lines lower was another filler line's
    `%a`, whose old definition line 3 now holds a comment."""
    view, navigator, _, _ = nav
    view.set_editable(True)
    QtGui.QTextCursor(view.document().findBlockByNumber(2)).insertText("  // one\n  // two\n")  # above line 3
    filler = 16 + 2  # a filler line, moved down by two
    signature = 3 + 2
    view.goto(filler, view.document().findBlockByNumber(filler - 1).text().index("%a") + 2, center=False)
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_F12)
    assert line_now(view) in (filler, signature)  # stays, or goes where %a is defined now
    qtbot.waitUntil(lambda: line_now(view) == signature, timeout=10_000)  # and goes there once indexed
    assert "func.func @main(%a" in view.textCursor().block().text()


def test_the_uses_list_follows_an_edit(nav, qtbot):
    """The list of uses kept the line numbers of the text before an edit: a row then led to another line."""
    view, navigator, _, uses = nav
    view.set_editable(True)
    view.goto(SUM_DEF, TEXT.split("\n")[SUM_DEF - 1].index("%sum") + 2)
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_F12, QtCore.Qt.KeyboardModifier.ShiftModifier)
    assert uses.count() == 3  # the definition and two uses on line 46
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=30_000):
        QtGui.QTextCursor(view.document().findBlockByNumber(2)).insertText("  // inserted\n")
    qtbot.waitUntil(lambda: uses.count() == 0 or uses.item(0).text().startswith(f"{SUM_DEF + 1}:"), timeout=5_000)
    for i in range(uses.count()):
        uses.itemActivated.emit(uses.item(i))
        assert "%sum" in view.textCursor().block().text()


PREFIX = "@big$async_"  # what every IREE-made symbol here starts with: the rows leave it out


def outline_text(executables: int, functions: int) -> tuple[str, list[tuple[int, str, str, int]]]:
    """MLIR with `executables` executables (an export and, in a module, a function each) and then
    `functions` one-line functions; and the outline it has, counted as the text is written:
    (depth, kind, name, line) of each item, parents before children."""
    lines, truth = ["module {"], []
    for k in range(executables):
        e = f"{PREFIX}dispatch_{k}"
        truth += [(0, "executable", e, len(lines) + 1), (1, "export", f"@x{k}", len(lines) + 2),
                  (1, "function", f"{e}_fn", len(lines) + 4)]
        lines += [f"  flow.executable private {e} {{", f"    flow.executable.export public @x{k}",
                  "    builtin.module {", f"      func.func {e}_fn(%a: f32) -> f32 {{", "        return %a : f32",
                  "      }", "    }", "  }"]
    for k in range(functions):
        truth.append((0, "function", f"@f{k}", len(lines) + 1))
        lines.append(f"  func.func @f{k}(%a: f32) -> f32 {{ return %a : f32 }}")
    return "\n".join(lines + ["}", ""]), truth


def rows_shown(outline) -> list[tuple[int, str, str, int]]:
    """(depth, row text, name, line) of every row, parents before children."""
    found = []

    def walk(row, depth):
        found.append((depth, row.text(0), row.data(0, NAME), row.data(0, PLACE)[0]))
        for i in range(row.childCount()):
            walk(row.child(i), depth + 1)

    for i in range(outline.topLevelItemCount()):
        walk(outline.topLevelItem(i), 0)
    return found


def expected_rows(truth) -> list[tuple[int, str, str, int]]:
    return [(depth, f"{name.removeprefix(PREFIX)}  ({kind})", name, line) for depth, kind, name, line in truth]


def test_a_huge_outline_is_made_off_the_gui_thread(qtbot, monkeypatch):
    """126,540 rows made on the GUI thread stalled the window 4.6 s: the rows are made on the
    navigator's building thread, and the old ones freed on a thread, whatever the outline's size."""
    gui = threading.get_ident()
    made: collections.Counter = collections.Counter()  # rows made, by "gui" / "elsewhere"

    class CountedRow(QtWidgets.QTreeWidgetItem):
        def __init__(self, *args):
            made["gui" if threading.get_ident() == gui else "elsewhere"] += 1
            super().__init__(*args)

    monkeypatch.setattr(QtWidgets, "QTreeWidgetItem", CountedRow)
    text, truth = outline_text(1_000, 100_000)
    widget, (view, navigator, outline, _) = shown_navigable(qtbot, text)
    assert made == {"elsewhere": len(truth) + 1}  # and one holder row
    assert rows_shown(outline) == expected_rows(truth)
    assert not outline.topLevelItem(0).isExpanded()  # too many to open them all at once

    depth, kind, name, line = truth[-1]
    view.goto(line, 5)
    assert outline.selected_name() == name
    _, _, fn, fn_line = truth[3 * 500 + 2]  # inside executable 500's function
    view.goto(fn_line + 1, 5)
    assert outline.selected_name() == fn and outline.currentItem().parent().isExpanded()
    outline.itemClicked.emit(outline.topLevelItem(1), 0)
    assert line_now(view) == truth[3][3]

    old_row = outline.topLevelItem(0)
    small, small_truth = outline_text(2, 3)
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=60_000):
        view.set_text(small)
    assert made["gui"] == 0
    assert rows_shown(outline) == expected_rows(small_truth)
    assert outline.topLevelItem(0).isExpanded()  # a small outline opens as before
    qtbot.waitUntil(lambda: not shiboken6.isValid(old_row), timeout=30_000)  # the old rows are freed
    widget.close()
