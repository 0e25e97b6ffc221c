"""FindBar: Ctrl+F, Enter/F3 next, Shift+Enter/Shift+F3 previous, Esc, count, wrap."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtWidgets  # noqa: E402

from npu_studio.ui.ir.find_bar import FindBar, install_find_shortcut  # noqa: E402
from npu_studio.ui.ir.ir_view import IrView  # noqa: E402

Key = QtCore.Qt.Key
SHIFT = QtCore.Qt.KeyboardModifier.ShiftModifier
TEXT = "Foo bar\nfoo baz\nFOO\nnothing\nfoo"


@pytest.fixture
def setup(qtbot):
    window = QtWidgets.QWidget()
    layout = QtWidgets.QVBoxLayout(window)
    view = IrView()
    bar = FindBar(view)
    layout.addWidget(view)
    layout.addWidget(bar)
    install_find_shortcut(view, bar)
    qtbot.addWidget(window)
    window.resize(600, 400)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()  # keys go to the active window (a real X server has one)
    qtbot.waitActive(window)
    view.set_text(TEXT)
    view.setFocus()
    yield view, bar
    del window


def selected(view):
    c = view.textCursor()
    return c.blockNumber() + 1, c.selectedText()


def test_ctrl_f_opens_and_escape_closes(setup, qtbot):
    view, bar = setup
    assert not bar.isVisible()
    qtbot.keyClick(view, Key.Key_F, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible() and bar.field.hasFocus()
    with qtbot.waitSignal(bar.sig_closed):
        qtbot.keyClick(bar.field, Key.Key_Escape)
    assert not bar.isVisible() and view.hasFocus()


def test_count_next_previous_and_wrap(setup, qtbot):
    view, bar = setup
    bar.open()
    qtbot.keyClicks(bar.field, "foo")
    assert bar.match_count() == 4  # case-insensitive by default
    assert bar.status.text() == "1 of 4" and selected(view) == (1, "Foo")
    qtbot.keyClick(bar.field, Key.Key_Return)
    assert bar.status.text() == "2 of 4" and selected(view) == (2, "foo")
    qtbot.keyClick(bar.field, Key.Key_F3)
    qtbot.keyClick(bar.field, Key.Key_Enter)
    assert bar.status.text() == "4 of 4" and selected(view) == (5, "foo")
    qtbot.keyClick(bar.field, Key.Key_Return)  # wraps to the first
    assert bar.status.text() == "1 of 4" and selected(view) == (1, "Foo")
    qtbot.keyClick(bar.field, Key.Key_Return, SHIFT)  # wraps back to the last
    assert bar.status.text() == "4 of 4"
    qtbot.keyClick(bar.field, Key.Key_F3, SHIFT)
    assert bar.status.text() == "3 of 4" and selected(view) == (3, "FOO")


def test_f3_in_the_view(setup, qtbot):
    view, bar = setup
    bar.open()
    qtbot.keyClicks(bar.field, "baz")
    view.setFocus()
    view.goto(1, 1)
    qtbot.keyClick(view, Key.Key_F3)
    assert selected(view) == (2, "baz")


def test_case_sensitive_toggle(setup, qtbot):
    view, bar = setup
    bar.open()
    qtbot.keyClicks(bar.field, "foo")
    bar.set_case_sensitive(True)
    assert bar.match_count() == 2
    assert bar.status.text() == "1 of 2" and selected(view) == (2, "foo")
    qtbot.keyClicks(bar.field, "x")
    assert bar.match_count() == 0 and bar.status.text() == "No matches"


def test_count_follows_edits_and_new_text(setup, qtbot):
    view, bar = setup
    bar.open()
    qtbot.keyClicks(bar.field, "foo")
    assert bar.match_count() == 4
    view.set_text("foo foo\n" * 10)
    assert bar.match_count() == 20
    view.set_editable(True)
    view.goto(1, 1)
    qtbot.keyClicks(view, "foo")
    assert bar.match_count() == 21


def test_counting_and_finding_in_100k_lines(setup, qtbot):
    view, bar = setup
    view.set_text("\n".join(f"  %{i} = arith.addf %a, %b : f32" for i in range(100_000)))
    bar.open()
    bar.field.blockSignals(True)
    bar.field.setText("arith.addf")
    bar.field.blockSignals(False)
    assert bar.match_count() == 100_000
    view.goto(50_000)
    bar.find_next()
    assert selected(view) == (50_001, "arith.addf") or selected(view) == (50_000, "arith.addf")
