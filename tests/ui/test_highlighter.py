"""MlirHighlighter: formats come from the lexer, only requested blocks are lexed."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtGui  # noqa: E402

from npu_studio.ui.ir.highlighter import MAX_LINE_CHARS, MlirHighlighter  # noqa: E402

LINE = "    %0 = arith.constant 0.000000e+00 : f32 loc(#loc1)"


class CountingHighlighter(MlirHighlighter):
    calls = 0

    def highlightBlock(self, text):  # noqa: N802
        self.calls += 1
        super().highlightBlock(text)


def make(qtbot, text: str):
    doc = QtGui.QTextDocument()
    hl = CountingHighlighter(doc)
    doc.setPlainText(text)
    hl.reset(text)
    return doc, hl


class Range:
    def __init__(self, r):
        self.start, self.length = r.start, r.length
        self.format = QtGui.QTextCharFormat(r.format)


def formats(doc, n):
    return [Range(r) for r in doc.findBlockByNumber(n).layout().formats()]


def test_nothing_is_lexed_until_asked(qtbot):
    doc, hl = make(qtbot, "\n".join([LINE] * 20_000))
    qtbot.wait(20)  # Qt's own delayed rehighlight would run here
    assert hl.blocks_highlighted == 0 and hl.calls == 0
    assert formats(doc, 0) == []
    assert hl.ensure_highlighted(100, 149) == 50
    assert hl.blocks_highlighted == 50 and hl.calls == 50
    assert formats(doc, 100) and formats(doc, 149)
    assert formats(doc, 99) == [] and formats(doc, 150) == []
    # Done blocks are not lexed again.
    assert hl.ensure_highlighted(100, 160) == 11


def test_formats_follow_token_types(qtbot):
    doc, hl = make(qtbot, LINE)
    hl.ensure_highlighted(0, 0)
    by_text = {LINE[f.start : f.start + f.length]: f.format for f in formats(doc, 0)}
    assert by_text["arith.constant"].foreground().color().isValid()
    assert by_text["0.000000e+00"].foreground() != by_text["arith.constant"].foreground()
    assert by_text["f32"].foreground() != by_text["0.000000e+00"].foreground()


def test_resource_section_state_reaches_lines_far_below(qtbot):
    text = "{-#\n  dialect_resources: {\n" + '    k: "0xAB",\n' * 500 + "  }\n#-}\nfoo.bar"
    doc, hl = make(qtbot, text)
    hl.ensure_highlighted(400, 400)  # lexed without the lines above it
    line = doc.findBlockByNumber(400).text()
    by_text = {line[f.start : f.start + f.length]: f.format for f in formats(doc, 400)}
    # In the resource section `k` is a key (attribute), not a plain name.
    doc2, hl2 = make(qtbot, '    k: "0xAB",')
    hl2.ensure_highlighted(0, 0)
    root = {doc2.firstBlock().text()[f.start : f.start + f.length] for f in formats(doc2, 0)}
    assert "k" in by_text and "k" not in root


def test_long_line_formatting_is_capped(qtbot):
    line = '%0 = foo.op "0x' + "AB" * 1_000_000 + '" : i8 ' + "%1 " * 1000
    doc, hl = make(qtbot, line)
    hl.ensure_highlighted(0, 0)
    assert max(f.start + f.length for f in formats(doc, 0)) <= MAX_LINE_CHARS


def test_edit_rehighlights_the_edited_line(qtbot):
    doc, hl = make(qtbot, LINE + "\n" + LINE)
    hl.ensure_highlighted(0, 1)
    assert hl.is_highlighted(1)
    cursor = QtGui.QTextCursor(doc.findBlockByNumber(1))
    cursor.insertText("// ")
    assert not hl.is_highlighted(1) and hl.is_highlighted(0)
    hl.ensure_highlighted(0, 1)
    fs = formats(doc, 1)
    assert len(fs) == 1 and fs[0].length == len(doc.findBlockByNumber(1).text())


def test_a_phase_document_keeps_its_colours_after_the_event_loop_turns(qtbot):
    """Edit mode shows the phase in a document of its own (IrView.new_document): its highlighted lines
    keep their colours once the event loop has run (Qt's delayed full rehighlight used to wipe them)."""
    from npu_studio.ui.ir.ir_view import IrView

    view = IrView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    view.use_document(IrView.new_document("\n".join([LINE] * 200)))
    first, last = view.visible_line_range()
    qtbot.wait(50)
    coloured = [n for n in range(first - 1, last) if formats(view.document(), n)]
    assert coloured == list(range(first - 1, last))
