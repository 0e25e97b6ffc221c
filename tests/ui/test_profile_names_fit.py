"""The compile profile in a narrow dock: every pass name starts at the table's left edge and every
number column is in view (no sideways scrolling); a name too long is elided in its middle, whole
in its tooltip."""

from __future__ import annotations

from PySide6 import QtCore

from npu_studio.core.debug.compile_profile import BuildProfile, PassTime, PhaseProfile

LONG = "mlir::iree_compiler::detail::OpPipelineAdaptorPass"  # a name IREE's --mlir-timing prints


def test_pass_names_and_numbers_fit_a_narrow_dock(window, qtbot):
    passes = [PassTime(LONG, 0.4625, 0.4625, 61), PassTime("ApplyPatternsPass", 1.4212, 1.4212, 24),
              PassTime("CanonicalizerPass", 0.333, 0.333, 54)]
    profile = BuildProfile("main", {"global-optimization": PhaseProfile("global-optimization", 2.3, 2.3, passes)},
                           "stamp")
    dock = window.compile_profile
    dock.profile = profile
    dock.phase_combo.addItem("global-optimization")
    dock.dock.setFloating(True)
    dock.dock.resize(420, 320)  # a third of a 1280-pixel window
    dock.dock.show()
    qtbot.waitExposed(dock.dock)
    dock._fill_table()
    qtbot.wait(50)
    assert dock.dock.width() <= 440
    scroll = dock.dock.widget()  # the scroll area every dock sits in: it never scrolls the table aside
    assert scroll.horizontalScrollBar().maximum() == 0, "the dock scrolls sideways: the names' starts hidden"
    table = dock.table
    assert table.rowCount() == 3 and table.item(0, 0).text() == "ApplyPatternsPass"  # most wall time first
    assert table.horizontalScrollBar().maximum() == 0, "the table scrolls sideways"
    assert table.columnViewportPosition(0) == 0
    last = table.columnCount() - 1
    assert table.columnViewportPosition(last) + table.columnWidth(last) <= table.viewport().width()
    row = next(r for r in range(3) if table.item(r, 0).text() == LONG)
    assert table.item(row, 0).toolTip() == LONG
    assert table.textElideMode() == QtCore.Qt.TextElideMode.ElideMiddle  # "mlir::iree…AdaptorPass": both ends read
