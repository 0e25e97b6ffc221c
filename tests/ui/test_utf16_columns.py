"""Columns between Python's code points and Qt's UTF-16 units (ui/ir/utf16.py), hand-counted."""

from __future__ import annotations

from npu_studio.ui.ir.utf16 import from_utf16, to_utf16, utf16_offsets


def test_qt_columns_count_an_emoji_twice():
    text = "a😀b%c"
    assert [to_utf16(text, c) for c in range(6)] == [0, 1, 3, 4, 5, 6]
    assert [from_utf16(text, u) for u in range(7)] == [0, 1, 1, 2, 3, 4, 5]
    assert utf16_offsets(text) == [0, 1, 3, 4, 5, 6]
    assert to_utf16("plain", 3) == from_utf16("plain", 3) == 3
