"""The app says what a mistaken `.onnx` file looks like, in its banner, and keeps running."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def test_a_text_file_named_onnx_is_refused_as_text_in_one_banner_line(window, qtbot, tmp_path):
    notes = tmp_path / "notes.onnx"
    notes.write_text("input is 1x3x224x224, output 1x1000\n")  # a text file, by construction
    window.open_path(notes)
    qtbot.waitUntil(lambda: window.error_banner.isVisible(), timeout=60_000)
    text = window.error_banner.text()
    assert str(notes) in text and "not an ONNX model: looks like text" in text
    assert "\n" not in text.strip() and "protobuf" not in text
    assert window.workspace is None and str(notes) not in window.recent_files()
