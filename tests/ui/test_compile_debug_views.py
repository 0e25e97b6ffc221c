"""The Compile profile and Compare builds docks, driven as a user would."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore

from npu_studio.core.debug.compile_profile import load_profile
from npu_studio.core.debug.executable_times import load_times
from npu_studio.core.workspace import variants
from npu_studio.core.workspace.workspace import Workspace


def _column(table, col):
    return [table.item(r, col).text() for r in range(table.rowCount())]


def test_profile_dock_records_sorts_and_feeds_the_timeline(window, qtbot, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    dock = window.compile_profile
    dock.dock.show()
    with qtbot.waitSignal(dock.sig_recorded, timeout=300_000):
        qtbot.mouseClick(dock.record_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dock.is_busy(), timeout=30_000)
    prof = load_profile(fresh_example)  # what the job published, read back from the workspace
    assert prof is not None
    dock.phase_combo.setCurrentText("hal")
    table = dock.table
    walls = [float(x) for x in _column(table, 1)]
    assert walls == sorted(walls, reverse=True) and len(walls) == len(prof.phases["hal"].passes)
    assert table.item(0, 0).text() == prof.phases["hal"].passes[0].name
    # Sorting by a numeric column sorts numbers, not text.
    table.sortByColumn(4, QtCore.Qt.SortOrder.AscendingOrder)
    runs = [int(x) for x in _column(table, 4)]
    assert runs == sorted(runs)
    # Hovering the timeline's hal card names its top pass.
    top = prof.phases["hal"].passes[0]
    assert f"Top pass: {top.name}" in window.timeline.tooltip_text("hal")


def test_executables_column_and_open_slowest(window, qtbot, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    dock = window.compile_profile
    with qtbot.waitSignal(dock.sig_recorded, timeout=300_000):
        qtbot.mouseClick(dock.executables_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dock.is_busy(), timeout=30_000)
    times = load_times(fresh_example)
    panel = window.executables
    col = panel.table.columnCount() - 1
    assert panel.table.horizontalHeaderItem(col).text() == "compile s"
    shown = {panel.table.item(r, 0).text(): panel.table.item(r, col).text() for r in range(panel.table.rowCount())}
    assert shown == {t.name: f"{t.seconds:.3f}" for t in times.times}
    assert panel.slowest_button.isEnabled()
    qtbot.mouseClick(panel.slowest_button, QtCore.Qt.MouseButton.LeftButton)
    assert panel.current_name() == times.times[0].name and panel.dock.isVisible()


def test_compare_dock_shows_no_difference_then_a_difference(window, qtbot, fresh_example):
    variants.create(fresh_example, "again")
    variants.build(fresh_example, "again")
    variants.create(fresh_example, "generic", "--iree-llvmcpu-target-cpu=generic")
    variants.build(fresh_example, "generic")
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    dock = window.compare_builds
    dock.dock.show()
    assert [dock.b_combo.itemText(i) for i in range(dock.b_combo.count())] == ["main", "again", "generic"]
    dock.a_combo.setCurrentText("main")
    dock.b_combo.setCurrentText("again")
    with qtbot.waitSignal(dock.sig_compared, timeout=300_000) as blocker:
        qtbot.mouseClick(dock.compare_button, QtCore.Qt.MouseButton.LeftButton)
    assert blocker.args[0].no_difference and dock.verdict.text().startswith("No difference")
    assert dock.diff.toPlainText() == ""
    qtbot.waitUntil(lambda: dock.compare_button.isEnabled(), timeout=30_000)
    dock.b_combo.setCurrentText("generic")
    with qtbot.waitSignal(dock.sig_compared, timeout=300_000) as blocker:
        qtbot.mouseClick(dock.compare_button, QtCore.Qt.MouseButton.LeftButton)
    r = blocker.args[0]
    assert r.first_difference is not None and f"first difference in {r.first_difference}" in dock.verdict.text()
    assert 'cpu = "generic"' in dock.diff.toPlainText()
    assert dock.summary.item(dock.summary.rowCount() - 4, 0).text() == "dispatches"


def test_a_variant_with_a_bad_flag_is_refused_in_one_line_and_a_good_one_builds(window, qtbot, fresh_example):
    from ..core.test_hostile_inputs import tree as tree_of

    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    # The NPU pipeline runs after the indexes and records its result in the workspace: let it finish first.
    qtbot.waitUntil(lambda: window.session.npu_state() == "done" and not window.is_busy(), timeout=120_000)
    dock = window.compare_builds
    before = tree_of(fresh_example.root)
    dock.variant_name.setText("bad")
    dock.variant_flags.setText("--no-such-flag")
    qtbot.mouseClick(dock.variant_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.error_banner.isVisible(), timeout=60_000)
    assert "'--no-such-flag' refused: iree-compile has no such option" in window.error_banner.text()
    qtbot.waitUntil(lambda: dock.variant_button.isEnabled(), timeout=30_000)
    assert tree_of(fresh_example.root) == before
    dock.variant_name.setText("o1")
    dock.variant_flags.setText("--iree-opt-level=O1")
    qtbot.mouseClick(dock.variant_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dock.b_combo.currentText() == "o1", timeout=300_000)
    assert variants.get(Workspace.open(fresh_example.root), "o1").vmfb_path.is_file()
