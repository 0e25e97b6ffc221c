"""IrView: elision, editing, regions, navigation, lazy highlighting."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from npu_studio.ui.ir.ir_view import IrView, Region, elide_text, real_to_display_col  # noqa: E402

BLOB = "0x" + "DEADBEEF" * 100  # 802 characters
TEXT = (
    "module {\n"
    f'  util.global private @c = dense<"{BLOB}"> : tensor<400xi8>\n'
    "  %cst = arith.constant dense<[" + ", ".join(["1.5"] * 100) + "]> : tensor<100xf32>\n"
    "  %short = arith.constant dense<[1, 2, 3]> : tensor<3xi32>\n"
    "}\n"
    "{-#\n  dialect_resources: {\n    builtin: {\n"
    f'      blob: "{BLOB}"\n'
    "    }\n  }\n#-}\n"
)


@pytest.fixture
def view(qtbot):
    v = IrView()
    qtbot.addWidget(v)
    v.resize(700, 400)
    v.show()
    qtbot.waitExposed(v)
    return v


def test_elide_text_keeps_lines_and_maps_columns():
    display, elisions = elide_text(TEXT)
    assert display.count("\n") == TEXT.count("\n")
    lines, real = display.split("\n"), TEXT.split("\n")
    assert "bytes elided" in lines[1] and "bytes elided" in lines[2]
    assert "bytes elided" in lines[8]  # resource blob value
    assert lines[3] == real[3]  # short dense list untouched
    assert sorted(elisions) == [1, 2, 8]
    e = elisions[1][0]
    assert e.real_len == len(BLOB) + 2
    n = int(lines[1].split("…(")[1].split(" ")[0])
    assert n == e.real_len - e.display_len + len(f"…({n} bytes elided)")
    # A column after the blob lands on the same character in the display.
    col = real[1].index(": tensor")
    assert lines[1][real_to_display_col(col, elisions[1])] == ":"
    assert real_to_display_col(5, elisions[1]) == 5


def test_nothing_to_elide_returns_same_text():
    assert elide_text("a\nb") == ("a\nb", {})


def test_set_text_elides_for_display_but_text_is_real(view, qtbot):
    view.set_text(TEXT)
    assert view.is_elided()
    assert "bytes elided" in view.toPlainText()
    assert view.text() == TEXT
    assert view.blockCount() == TEXT.count("\n") + 1
    view.set_text(TEXT, elide=False)
    assert not view.is_elided() and view.toPlainText() == TEXT


def test_read_only_by_default_and_editing_turns_elision_off(view, qtbot):
    assert view.isReadOnly()
    view.set_text(TEXT)
    with qtbot.waitSignal(view.sig_elided_changed) as blocker:
        view.set_editable(True)
    assert blocker.args == [False]
    assert view.is_editable() and not view.is_elided()
    assert view.toPlainText() == TEXT
    view.goto(1, 1)
    qtbot.keyClicks(view, "// x")
    assert view.text().startswith("// xmodule {")
    assert view.text()[len("// x"):] == TEXT


def test_goto_maps_file_columns_past_elisions(view):
    view.set_text(TEXT)
    real_line = TEXT.split("\n")[1]
    col = real_line.index(": tensor") + 1
    view.goto(2, col)
    c = view.textCursor()
    assert c.blockNumber() == 1
    assert c.block().text()[c.positionInBlock()] == ":"


def test_goto_centers_far_lines(view):
    view.set_text("\n".join(f"%{i} = foo.bar" for i in range(5000)))
    view.goto(3000)
    first, last = view.visible_line_range()
    assert first < 3000 < last
    assert abs((first + last) / 2 - 3000) <= 2
    assert view.textCursor().blockNumber() == 2999


def test_regions_mark_and_scroll(view):
    view.set_text("\n".join(f"%{i} = foo.bar" for i in range(5000)))
    regions = [Region(f"d{i}", i * 20 + 1, i * 20 + 10, None) for i in range(200)]
    view.set_regions(regions)
    assert view.marked_key() is None
    view.mark_region("d150")
    assert view.marked_key() == "d150"
    first, last = view.visible_line_range()
    assert first < 3001 and 3010 < last and abs((first + last) / 2 - 3005.5) <= 2  # centred
    assert view.region_at_line(3005).key == "d150"
    view.verticalScrollBar().setValue(100)
    view.mark_region("d151", reveal=False)  # marked where it is: the view stays put
    assert view.marked_key() == "d151" and view.verticalScrollBar().value() == 100
    assert view.region_at_line(3015) is None
    with pytest.raises(KeyError):
        view.mark_region("nope")
    view.mark_region(None)
    assert view.marked_key() is None


def test_a_marked_region_below_folded_lines_is_on_screen(view):
    """The scroll bar counts the lines on screen: folded lines above a region (the #loc aliases) must not
    push it off screen when it is marked (it did by as many lines as were folded)."""
    from npu_studio.core.ir.nav_index import FoldRange
    from npu_studio.ui.ir.folding import Folding

    view.set_text("\n".join(f"%{i} = foo.bar" for i in range(400)))
    Folding(view).set_ranges([FoldRange(2, 150, "locations", True)], fold_defaults=True)
    view.set_regions([Region("d", 200, 260, None)])  # taller than the view: its first line near the top
    view.mark_region("d")
    first, last = view.visible_line_range()
    assert first <= 200 <= last


def test_innermost_region_wins():
    v = IrView()
    v.set_text("\n".join("x" for _ in range(50)))
    v.set_regions([Region("outer", 1, 40), Region("inner", 10, 12)])
    assert v.region_at_line(11).key == "inner"
    assert v.region_at_line(20).key == "outer"
    v.deleteLater()


def test_region_tint_and_mark_are_painted(view, qtbot):
    view.set_text("\n".join("" for _ in range(100)))
    red = QtGui.QColor("#ff0000")
    view.set_regions([Region("a", 1, 5, red)])

    def pixel_at_line(line):
        qtbot.wait(10)
        img = view.viewport().grab().toImage()
        y = int(view.blockBoundingGeometry(view.document().findBlockByNumber(line - 1))
                .translated(view.contentOffset()).center().y())
        return img.pixelColor(img.width() - 5, y)

    plain, light = pixel_at_line(20), pixel_at_line(3)
    assert light != plain and light.red() > light.green()
    view.mark_region("a")
    strong = pixel_at_line(3)
    assert strong.green() < light.green()  # more red, less white


def test_click_in_region_emits_key(view, qtbot):
    view.set_text("\n".join(f"line {i}" for i in range(100)))
    view.set_regions([Region(("disp", 1), 3, 6, None)])
    rect = view.cursorRect(QtGui.QTextCursor(view.document().findBlockByNumber(3)))
    with qtbot.waitSignal(view.sig_region_clicked) as blocker:
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=rect.center() + QtCore.QPoint(20, 0))
    assert blocker.args == [("disp", 1)]
    rect = view.cursorRect(QtGui.QTextCursor(view.document().findBlockByNumber(20)))
    with qtbot.assertNotEmitted(view.sig_region_clicked):
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         pos=rect.center() + QtCore.QPoint(20, 0))


def test_large_document_highlights_only_visible_lines(view, qtbot):
    line = "    %0 = arith.addf %a, %b : f32 loc(#loc1)"
    view.set_text("\n".join([line] * 100_000))
    qtbot.wait(50)
    first, last = view.visible_line_range()
    assert last - first < 100
    hl = view.highlighter
    assert hl.is_highlighted(first - 1) and hl.is_highlighted(last - 1)
    assert hl.blocks_highlighted < 200
    qtbot.waitUntil(lambda: not view.stream.loading)  # a big text comes in a slice at a time
    view.verticalScrollBar().setValue(50_000)
    qtbot.wait(20)
    first, last = view.visible_line_range()
    assert first == 50_001 and hl.is_highlighted(last - 1)
    assert hl.blocks_highlighted < 400


def test_edited_line_is_rehighlighted(view, qtbot):
    view.set_text("%0 = foo.bar\n%1 = foo.baz")
    view.set_editable(True)
    view.goto(2, 1)
    qtbot.keyClicks(view, "// ")
    qtbot.waitUntil(lambda: view.highlighter.is_highlighted(1))
    fs = view.document().findBlockByNumber(1).layout().formats()
    assert [(f.start, f.length) for f in fs] == [(0, len("// %1 = foo.baz"))]
