"""Navigation in the IR view: F12, Ctrl+click, find uses, hover, outline sync, folding, history.

The truth is the text itself, counted by hand-written rules (which line holds `%0 = `, where each
`#loc` alias is) and, for types, MLIR's parse of the snapshot.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from npu_studio.ui.ir.ir_view import IrView  # noqa: E402
from npu_studio.ui.ir.nav_panels import navigable  # noqa: E402
from npu_studio.ui.ir.navigation import IrNavigator  # noqa: E402
from tests.conftest import EXAMPLE  # noqa: E402
from tests.zoo_cache import cached_workspace  # noqa: E402


@pytest.fixture(scope="module")
def flow_text():
    ws = cached_workspace("single_conv", lambda folder: EXAMPLE, group="zoo")
    return ws.snapshot_path("flow").read_text(encoding="utf-8")


def shown_navigable(qtbot, text: str, width: int = 1100, height: int = 700):
    """An IrView with its navigator, outline and uses list, shown and indexed on `text`."""
    view = IrView()
    navigator = IrNavigator(view)
    widget, outline, uses = navigable(view, navigator)
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    # Active, so that the view can take the keyboard focus its F12 shortcut needs (an X server gives
    # focus only to the active window; the offscreen platform activates every shown one).
    widget.activateWindow()
    qtbot.waitActive(widget)
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=60_000):
        view.set_text(text)
    return widget, (view, navigator, outline, uses)


@pytest.fixture
def nav(qtbot, flow_text):
    widget, parts = shown_navigable(qtbot, flow_text)
    yield parts
    widget.close()


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.split("\n"), 1) if needle in l)


def put_cursor(view: IrView, line: int, col: int) -> None:
    view.goto(line, col + 1, center=True)


def test_f12_goes_to_the_definition_and_alt_left_comes_back(nav, flow_text):
    view, navigator, _, _ = nav
    lines = flow_text.split("\n")
    use_line = line_of(flow_text, "flow.dispatch @")
    col = lines[use_line - 1].index("(%") + 1  # the first operand
    name = lines[use_line - 1][col:].split(",")[0].split(")")[0]
    def_line = max(i for i, l in enumerate(lines, 1) if l.strip().startswith(f"{name} = ") and i < use_line)
    put_cursor(view, use_line, col)
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_F12)
    assert view.textCursor().blockNumber() + 1 == def_line
    QTest.keyClick(view, QtCore.Qt.Key.Key_Left, QtCore.Qt.KeyboardModifier.AltModifier)
    assert view.textCursor().blockNumber() + 1 == use_line
    QTest.keyClick(view, QtCore.Qt.Key.Key_Right, QtCore.Qt.KeyboardModifier.AltModifier)
    assert view.textCursor().blockNumber() + 1 == def_line


def test_ctrl_click_on_a_symbol_goes_to_the_export(nav, flow_text, qtbot):
    view, navigator, _, _ = nav
    lines = flow_text.split("\n")
    use_line = line_of(flow_text, "flow.dispatch @")
    ref = lines[use_line - 1].split("flow.dispatch ")[1].split("(")[0].split("[")[0]
    export = ref.split("::")[1]
    export_line = line_of(flow_text, f"flow.executable.export public {export} ")
    col = lines[use_line - 1].index(export)
    put_cursor(view, use_line, 0)
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(use_line - 1))
    cursor.setPosition(cursor.position() + col + 2)
    rect = view.cursorRect(cursor)
    QTest.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.ControlModifier,
                     rect.center())
    # the jump follows the view's own handling of the release, on the next turn of the event loop
    qtbot.waitUntil(lambda: view.textCursor().blockNumber() + 1 == export_line, timeout=2_000)


def test_find_uses_lists_every_line(nav, flow_text):
    view, navigator, _, uses = nav
    lines = flow_text.split("\n")
    def_line = line_of(flow_text, "%0 = ")
    put_cursor(view, def_line, lines[def_line - 1].index("%0"))
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_F12, QtCore.Qt.KeyboardModifier.ShiftModifier)
    assert uses.isVisible()
    listed = [int(uses.item(i).text().split(":")[0]) for i in range(uses.count())]
    # every line of the same function naming %0 as an operand (the function ends at its `}` line)
    end = next(i for i in range(def_line, len(lines)) if lines[i].startswith("  }")) + 1
    expected = [def_line] + [i for i in range(def_line + 1, end + 1)
                             if "%0" in lines[i - 1].replace("%0 = ", "") and "%0" in lines[i - 1]]
    assert listed == expected
    assert uses.height() > 2 * uses.fontMetrics().height()  # on show, not squeezed to nothing
    uses.itemActivated.emit(uses.item(len(listed) - 1))
    assert view.textCursor().blockNumber() + 1 == listed[-1]
    view.setFocus()
    QTest.keyClick(view, QtCore.Qt.Key.Key_F12)  # from a use back to the definition
    assert view.textCursor().blockNumber() + 1 == def_line
    view.set_text("module {\n}\n")  # another text: the list of the old one goes
    assert not uses.isVisible() and uses.count() == 0


def test_hover_shows_type_and_defining_op(nav, flow_text, qtbot):
    view, navigator, _, _ = nav
    qtbot.waitUntil(lambda: navigator.types is not None, timeout=60_000)  # MLIR's parse, in a child
    lines = flow_text.split("\n")
    def_line = line_of(flow_text, "flow.dispatch @")
    text_line = lines[def_line - 1]
    name = text_line.strip().split(" = ")[0]
    result_type = text_line.split(" -> ")[-1].split(" loc(")[0].strip()  # as printed after the arrow
    put_cursor(view, def_line, 0)
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(def_line - 1))
    cursor.setPosition(cursor.position() + text_line.index(name) + 1)
    tip = navigator.hover_text(view.cursorRect(cursor).center())
    assert tip.startswith(f"{name}: {result_type}\nresult of flow.dispatch")
    alias_line = line_of(flow_text, "linalg.fill")
    alias = lines[alias_line - 1].rsplit("loc(", 1)[1].rstrip(")")
    node = next(l for l in lines if l.startswith(f"{alias} = loc(")).split('"')[1]
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(alias_line - 1))
    cursor.setPosition(cursor.position() + lines[alias_line - 1].rindex(alias) + 2)
    put_cursor(view, alias_line, 0)
    assert f"ONNX node {node}" in navigator.hover_text(view.cursorRect(cursor).center())


def test_outline_follows_the_cursor_and_jumps(nav, flow_text):
    view, navigator, outline, _ = nav
    inside = line_of(flow_text, "linalg.generic")
    put_cursor(view, inside, 0)
    func_line = max(i for i, l in enumerate(flow_text.split("\n"), 1) if i < inside and "func.func @" in l)
    name = flow_text.split("\n")[func_line - 1].split("func.func ")[1].split("(")[0]
    assert outline.selected_name() == name
    first_exec = next(outline.topLevelItem(i) for i in range(outline.topLevelItemCount())
                      if "(executable)" in outline.topLevelItem(i).text(0))
    outline.itemClicked.emit(first_exec, 0)
    assert view.textCursor().blockNumber() + 1 == line_of(flow_text, "flow.executable private")


def test_location_aliases_fold_by_default_and_unfold_on_goto(nav, flow_text):
    view, navigator, _, _ = nav
    lines = flow_text.split("\n")
    locs = [i for i, l in enumerate(lines, 1) if l.startswith("#loc")]
    runs = [a for a in locs if a - 1 not in locs]
    hidden = [i for i in locs if not view.document().findBlockByNumber(i - 1).isVisible()]
    assert hidden == [i for i in locs if i not in runs]
    first, last = view.visible_line_range()
    shown = [n for n in range(first, last + 1) if view.document().findBlockByNumber(n - 1).isVisible()]
    assert not set(shown) & set(hidden)
    view.goto(hidden[0], 1)
    assert view.document().findBlockByNumber(hidden[0] - 1).isVisible()
    # the gutter's marker folds it again
    run_start = max(r for r in runs if r < hidden[0])
    y = view.blockBoundingGeometry(view.document().findBlockByNumber(run_start - 1)).translated(
        view.contentOffset()).center().y()
    view.verticalScrollBar().setValue(0)
    QtWidgets.QApplication.processEvents()
    y = view.blockBoundingGeometry(view.document().findBlockByNumber(run_start - 1)).translated(
        view.contentOffset()).center().y()
    QTest.mouseClick(view.gutter(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier,
                     QtCore.QPoint(view.gutter().width() - 5, int(y)))
    assert not view.document().findBlockByNumber(hidden[0] - 1).isVisible()


def test_edits_reindex(nav, qtbot, flow_text):
    view, navigator, _, _ = nav
    view.set_editable(True)
    line = line_of(flow_text, "%0 = ")
    cursor = QtGui.QTextCursor(view.document().findBlockByNumber(line - 1))
    cursor.setPosition(cursor.position() + flow_text.split("\n")[line - 1].index("%0") + 1)
    with qtbot.waitSignal(navigator.sig_index_ready, timeout=30_000):
        cursor.insertText("renamed")
    put_cursor(view, line, flow_text.split("\n")[line - 1].index("%0") + 2)
    entity = navigator.entity_at_cursor()
    assert entity.name == "%renamed0" and entity.definition.line == line
