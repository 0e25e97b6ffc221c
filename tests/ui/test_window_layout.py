"""The window fits 1280x800, 1366x768 and 1600x1000 with every dock open; the layout is saved with a
version and View > Reset Layout restores the default. Geometry is checked against the window's own
rectangle and Qt's size hints (the truth of what Qt lays out), never against numbers of ours."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import shutil

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.ui import layout
from npu_studio.ui.main_window import MainWindow
from tests.core.npu.schedule_sample import sample_model

SIZES = [(1280, 800), (1366, 768), (1600, 1000)]


def settings_at(path) -> QtCore.QSettings:
    return QtCore.QSettings(str(path), QtCore.QSettings.Format.IniFormat)


def make_window(qtbot, settings, size=None) -> MainWindow:
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    if size is not None:
        w.resize(*size)
    return w


def on_show(dock: QtWidgets.QDockWidget) -> bool:
    """Open and not hidden behind another tab of its group."""
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


def rect_in_window(window, widget) -> QtCore.QRect:
    return QtCore.QRect(widget.mapTo(window, QtCore.QPoint(0, 0)), widget.size())


@pytest.fixture(scope="module")
def flow_trace(tmp_path_factory, example_workspace):
    from npu_studio.core.debug.pass_trace import PassTraceJob
    from npu_studio.core.workspace.workspace import Workspace

    dest = tmp_path_factory.mktemp("trace") / "ws"
    shutil.copytree(example_workspace.root, dest)
    return PassTraceJob(Workspace.open(dest), "flow").run()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_dock_open_fits_the_screen_size(qtbot, tmp_path, size, flow_trace):
    w = make_window(qtbot, settings_at(tmp_path / "s.ini"))
    w.show_all_docks()
    w.schedule.show_run(sample_model())
    w.edit_controller.pass_view.set_trace(flow_trace)
    w.edit_controller.pass_view.hide_unchanged.setChecked(True)
    w.resize(*size)
    for dock in w.docks():  # every dock open, each tab group shown in turn
        dock.raise_()
        qtbot.wait(20)
        QtWidgets.QApplication.processEvents()

        # The window could be this small: its layout asks for no more than 1280x720.
        hint = w.minimumSizeHint()
        assert hint.width() <= 1280 and hint.height() <= 720, (dock.objectName(), hint)
        assert (w.width(), w.height()) == size
        screen = w.screen().availableGeometry()
        if screen.width() >= size[0] and screen.height() >= size[1]:  # a real screen this large (Xvfb)
            assert screen.contains(w.frameGeometry())
        window_rect = w.rect()
        shown = [d for d in w.docks() if on_show(d)]
        assert dock in shown
        for d in shown:
            assert window_rect.contains(d.geometry()), (d.objectName(), d.geometry(), window_rect)
            assert window_rect.contains(rect_in_window(w, d.widget())), d.objectName()

    w.schedule.raise_()
    qtbot.wait(50)
    chart = w.schedule.chart
    assert chart.row_pixels() >= 14
    font = chart.engines.getAxis("left").style.get("tickFont") or chart.engines.getAxis("left").font()
    assert chart.row_pixels() >= QtGui.QFontMetrics(font).height()  # engine labels cannot overlap

    w.edit_controller.pass_dock.raise_()
    qtbot.wait(50)
    view = w.edit_controller.pass_view
    table = view.table
    row = next(r for r in range(table.rowCount()) if not table.isRowHidden(r))
    name = table.item(row, 1).text().strip()
    needed = table.fontMetrics().horizontalAdvance(name)
    assert table.columnWidth(1) >= min(needed, 120), (table.columnWidth(1), name)
    assert table.visualItemRect(table.item(row, 1)).width() > 0


def test_a_saved_layout_comes_back_and_another_version_falls_back_to_the_default(qtbot, tmp_path):
    path = tmp_path / "s.ini"
    w = make_window(qtbot, settings_at(path))
    w.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, w.log_dock)
    w.log_dock.show()
    w.close()
    saved = settings_at(path)
    assert int(saved.value(layout.VERSION_KEY)) == layout.LAYOUT_VERSION

    again = make_window(qtbot, settings_at(path))
    assert again.dockWidgetArea(again.log_dock) == QtCore.Qt.DockWidgetArea.LeftDockWidgetArea
    again.close()

    old = settings_at(path)
    old.setValue(layout.VERSION_KEY, layout.LAYOUT_VERSION - 1)
    old.sync()
    fallback = make_window(qtbot, settings_at(path))
    assert fallback.dockWidgetArea(fallback.log_dock) == QtCore.Qt.DockWidgetArea.BottomDockWidgetArea
    assert fallback.log_dock in fallback.tabifiedDockWidgets(fallback.schedule)
    fallback.close()

    broken = settings_at(path)
    broken.setValue(layout.VERSION_KEY, layout.LAYOUT_VERSION)
    broken.setValue(layout.STATE_KEY, QtCore.QByteArray(b"not a saved state"))
    broken.sync()
    recovered = make_window(qtbot, settings_at(path))
    assert recovered.dockWidgetArea(recovered.schedule) == QtCore.Qt.DockWidgetArea.BottomDockWidgetArea
    assert recovered.schedule.isVisible()


def test_reset_layout_puts_every_dock_back(qtbot, tmp_path):
    w = make_window(qtbot, settings_at(tmp_path / "s.ini"))
    w.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, w.schedule)
    w.schedule.setFloating(True)
    w.executables.dock.show()
    w.log_dock.hide()
    reset = next(a for a in w.view_menu.actions() if a.text() == "&Reset Layout")
    reset.trigger()
    assert not w.schedule.isFloating()
    assert w.dockWidgetArea(w.schedule) == QtCore.Qt.DockWidgetArea.BottomDockWidgetArea
    assert {d.objectName() for d in w.tabifiedDockWidgets(w.schedule)} == {"logDock"}
    w.edit_controller.pass_dock.show()  # closed by default: opened, it joins the bottom tabs
    assert {d.objectName() for d in w.tabifiedDockWidgets(w.schedule)} == {"logDock", "passDock"}
    assert w.schedule.isVisible() and w.log_dock.toggleViewAction().isChecked()
    assert not w.executables.dock.toggleViewAction().isChecked()
    w.executables.dock.show()
    w.npu.dock.show()  # both right docks open: tabbed, never side by side
    assert w.npu.dock in w.tabifiedDockWidgets(w.executables.dock)


def test_a_window_saved_larger_than_the_screen_opens_inside_it(qtbot, tmp_path):
    path = tmp_path / "s.ini"
    big = make_window(qtbot, settings_at(path))
    screen = big.screen().availableGeometry()
    big.setGeometry(screen.x() + 300, screen.y() + 200, screen.width() + 700, screen.height() + 400)
    big.close()
    w = make_window(qtbot, settings_at(path))
    assert screen.contains(w.frameGeometry()), (w.frameGeometry(), screen)


def test_the_timeline_scrolls_instead_of_widening_the_window(qtbot, tmp_path):
    w = make_window(qtbot, settings_at(tmp_path / "s.ini"), size=(1280, 800))
    w.executables.dock.show()
    qtbot.wait(20)
    scroller = w.timeline_scroller
    assert w.timeline.minimumSizeHint().width() > scroller.viewport().width()  # it would not fit...
    assert scroller.horizontalScrollBar().maximum() > 0  # ... so it scrolls
    assert w.width() == 1280


@pytest.mark.slow
def test_at_1280x800_the_default_layout_gives_the_ir_and_the_table_the_room(qtbot, tmp_path):
    # resnet50 from the light zoo, compiled: the IR view shows at least 25 lines and the dispatch table 8 rows,
    # counted from what Qt lays out (the view's visible blocks, the table's visible rows).
    from tests.zoo_cache import zoo_workspace

    ws = tmp_path / "r50"
    shutil.copytree(zoo_workspace("resnet50").root, ws)
    w = make_window(qtbot, settings_at(tmp_path / "s.ini"), size=(1280, 800))
    with qtbot.waitSignal(w.sig_index_finished, timeout=120_000):
        w.open_path(ws)
    w.show_phase("flow")
    qtbot.waitUntil(lambda: w.session.npu is not None, timeout=120_000)
    qtbot.wait(300)
    first, last = w.ir_view.visible_line_range()
    fully = last - first  # the last one may be cut
    assert fully >= 25, (first, last)
    table = w.dispatch_table
    top_row = table.rowAt(2)
    bottom_row = table.rowAt(table.viewport().height() - 2)
    rows = (bottom_row if bottom_row >= 0 else table.rowCount()) - top_row
    assert table.rowCount() > 8 and rows >= 8, rows
    # The schedule waits as a tab; brought to the front it grows to its readable height.
    assert not on_show(w.schedule) and on_show(w.log_dock)
    view_entry = w.schedule.toggleViewAction()
    view_entry.trigger()  # closes it (it was open, behind the Log) ...
    view_entry.trigger()  # ... and opens it again, raised
    qtbot.wait(100)
    assert on_show(w.schedule)
    assert w.schedule.widget().verticalScrollBar().maximum() == 0  # its contents need no scrolling
