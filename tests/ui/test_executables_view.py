"""The Executables dock driven as a user would: dispatch -> executable -> edit -> substitute -> verdict."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from PySide6 import QtCore, QtGui

from npu_studio.core.workspace import substitutions as sub_records
from npu_studio.ui.executables.verdicts import FAIL_COLOR

from ..conftest import EXAMPLE


def _replace_in_editor(view, old: str, new: str, last: bool = False) -> None:
    """Select `old` with the document's own find and type `new` over it (one undo step)."""
    doc = view.document()
    flags = QtGui.QTextDocument.FindFlag.FindBackward if last else QtGui.QTextDocument.FindFlag(0)
    start = QtGui.QTextCursor(doc)
    if last:
        start.movePosition(QtGui.QTextCursor.MoveOperation.End)
    cursor = doc.find(old, start, flags)
    assert not cursor.isNull(), old
    view.setTextCursor(cursor)
    view.insertPlainText(new)


def test_substitute_from_the_dispatch_table_and_read_the_verdict(window, qtbot, fresh_example):
    ws = fresh_example
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(ws.root)
    panel = window.executables
    window.show_phase("flow")

    # select dispatch #0 in the window's table and open its executable (double-click)
    table = window.dispatch_table
    rect = table.visualItemRect(table.item(0, 0))
    qtbot.mouseClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert panel.dock.isVisible()
    name = panel.current_name()
    assert name is not None and name.endswith("dispatch_0")
    editor = panel.editor
    assert editor.text() == next((ws.root / "executables" / "sources").glob("*.mlir")).read_text()

    # a typo is caught before any build: the editor shows it and sits on its line; undo restores the text
    original = editor.text()
    _replace_in_editor(editor.view, "arith.mulf %in, %in_1", "arith.mulf %in %in_1")
    broken = editor.text()
    qtbot.mouseClick(panel.substitute_button, QtCore.Qt.MouseButton.LeftButton)
    assert not panel.is_busy() and editor.error.isVisible()
    line = broken[: broken.index("arith.mulf %in %in_1")].count("\n") + 1
    assert f":{line}:" in editor.error.text()
    assert editor.cursor_line_col()[0] == line
    assert editor.text() == broken  # kept as typed
    editor.undo_button.click()
    assert editor.text() == original

    # bias add -> sub, substitute, read the verdict
    _replace_in_editor(editor.view, "arith.addf %in, %in_1", "arith.subf %in, %in_1", last=True)
    edited = editor.text()
    # a look at the configuration and back: the edit is still there
    editor.set_kind(sub_records.CONFIGURATION)
    assert "lowering_config" in editor.text()
    editor.set_kind(sub_records.SOURCE)
    assert editor.text() == edited
    panel.time_check.setChecked(False)
    with qtbot.waitSignal(panel.sig_finished, timeout=180_000) as done:
        qtbot.mouseClick(panel.substitute_button, QtCore.Qt.MouseButton.LeftButton)
    assert done.args == [True]
    assert "FAIL" in panel.verdict.text()
    assert FAIL_COLOR.name() in panel.verdict.styleSheet()
    assert panel.results.item(0, 1).text() == "FAIL"
    bias = numpy_helper.to_array(next(i for i in onnx.load(str(EXAMPLE)).graph.initializer if i.name == "bias"))
    max_abs = float(panel.results.item(0, 2).text())
    assert max_abs == pytest.approx(2 * np.abs(bias).max(), rel=1e-5)
    # the list shows the substitution and its verdict in colour
    row = next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == name)
    assert panel.table.item(row, 4).text() == "source (on)"
    assert panel.table.item(row, 5).text().startswith("FAIL")
    assert panel.table.item(row, 5).foreground().color() == FAIL_COLOR
    [record] = sub_records.load(window.workspace)
    assert record.applied and record.verdict["passed"] is False
