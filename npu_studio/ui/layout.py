"""The window's dock layout: the default, the saved one (with a version), and fitting the screen.

Docks that share an area are tabbed, so opening one never squeezes or widens the others.
Every dock's contents sit in a scroll area: a dock narrower than its contents scrolls
instead of raising the window's minimum size past the screen. The saved layout carries
`LAYOUT_VERSION`; a saved layout of another version (or a broken one) is ignored and the
default is used, like View > Reset Layout.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

# Bump when the default layout changes in a way an old saved state would undo.
LAYOUT_VERSION = 5
STATE_KEY, GEOMETRY_KEY = "layout/state", "layout/geometry"
VERSION_KEY = "layout/version"

Area = QtCore.Qt.DockWidgetArea
# Dock object names, by area, in tab order (the first is raised), and which are open by default.
DEFAULT_AREAS = {
    Area.RightDockWidgetArea: ("executablesDock", "npuTargetDock", "compileProfileDock", "compareBuildsDock",
                                 "graph_dock"),
    Area.BottomDockWidgetArea: ("logDock", "schedule_dock", "passDock", "trace_dock", "module_dock", "assembly_dock",
                                "sweep_dock",
                                "sweep_point_dock"),
}
OPEN_BY_DEFAULT = {"schedule_dock", "logDock"}
DEFAULT_SIZE = QtCore.QSize(1400, 900)
BOTTOM_SHARE, RIGHT_SHARE = 0.36, 0.36  # of the window's height / width
IR_LINES = 25  # lines the IR view keeps in the default layout: the bottom docks start no taller than that allows
BOTTOM_FLOOR = 110  # the bottom tabs' least default height (the Log's last lines)
LOG_SHARE = 0.2  # of the window's height, with the Log in front


def scrollable(widget: QtWidgets.QWidget) -> QtWidgets.QScrollArea:
    """`widget` in a frameless scroll area that shows bars only when the space is below its minimum."""
    area = QtWidgets.QScrollArea()
    area.setObjectName(f"{widget.objectName() or type(widget).__name__}Scroll")
    area.setWidgetResizable(True)
    area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    area.setWidget(widget)
    return area


def make_dock_fit(dock: QtWidgets.QDockWidget) -> None:
    """Put the dock's contents in a scroll area (once)."""
    inner = dock.widget()
    if inner is not None and not isinstance(inner, QtWidgets.QScrollArea):
        dock.setWidget(scrollable(inner))


def dock_contents(dock: QtWidgets.QDockWidget) -> QtWidgets.QWidget | None:
    inner = dock.widget()
    return inner.widget() if isinstance(inner, QtWidgets.QScrollArea) else inner


def available_screen(window: QtWidgets.QWidget) -> QtCore.QRect:
    screen = window.screen() or QtGui.QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QtCore.QRect(0, 0, 1600, 1000)


def apply_default_layout(window: QtWidgets.QMainWindow) -> None:
    """Every dock in its default area, tabbed with the others there, open or closed by default."""
    docks = {d.objectName(): d for d in window.findChildren(QtWidgets.QDockWidget)}
    for dock in docks.values():
        dock.setFloating(False)
    for area, names in DEFAULT_AREAS.items():
        placed = [docks[n] for n in names if n in docks]
        for dock in placed:
            window.addDockWidget(area, dock)
        for first, other in zip(placed, placed[1:]):
            window.tabifyDockWidget(first, other)
        for dock in placed:
            dock.setVisible(dock.objectName() in OPEN_BY_DEFAULT)
        shown = [d for d in placed if d.objectName() in OPEN_BY_DEFAULT]
        if shown:
            shown[0].raise_()
    for name, dock in docks.items():  # a dock no area lists: right, closed
        if not any(name in names for names in DEFAULT_AREAS.values()):
            window.addDockWidget(Area.RightDockWidgetArea, dock)
            dock.hide()
    size_docks(window)


def size_docks(window: QtWidgets.QMainWindow, ir_view: QtWidgets.QPlainTextEdit | None = None) -> None:
    """The default shares of the window for the bottom and right areas. With `ir_view` on show, the
    bottom area takes no more than leaves that view IR_LINES lines (the work comes first)."""
    size = window.size() if window.isVisible() else DEFAULT_SIZE
    for area, names in DEFAULT_AREAS.items():
        # The tab on show of each group (Qt sizes a tab group by it; hidden tabs are ignored).
        docks = [d for d in window.findChildren(QtWidgets.QDockWidget)
                 if d.objectName() in names and window.dockWidgetArea(d) == area and not d.isFloating()
                 and d.isVisible() and not d.visibleRegion().isEmpty()]
        if not docks:
            continue
        if area == Area.BottomDockWidgetArea:
            # Enough for the tallest dock's contents (the schedule's readable rows), up to half the window.
            needed = max(dock_contents(d).minimumSizeHint().height() for d in docks) + 64
            height = max(int(size.height() * BOTTOM_SHARE), min(needed, size.height() // 2))
            if any(d.objectName() == "logDock" for d in docks):  # a few lines of log need no more
                height = min(height, max(BOTTOM_FLOOR, int(size.height() * LOG_SHARE)))
            if ir_view is not None and ir_view.isVisible():
                spare = ir_view.viewport().height() - IR_LINES * ir_view.fontMetrics().lineSpacing()
                height = max(BOTTOM_FLOOR, min(height, docks[0].height() + spare))
            elif ir_view is not None:  # the first screen (no model yet): the bottom tabs stay small
                height = min(height, 2 * BOTTOM_FLOOR)
            window.resizeDocks(docks, [height] * len(docks), QtCore.Qt.Orientation.Vertical)
        else:
            window.resizeDocks(docks, [int(size.width() * RIGHT_SHARE)] * len(docks), QtCore.Qt.Orientation.Horizontal)


def front_if_room(window: QtWidgets.QMainWindow, ir_view: QtWidgets.QPlainTextEdit,
                  dock: QtWidgets.QDockWidget) -> None:
    """Bring the bottom tab `dock` (the schedule) to the front when the window is tall enough for it at
    its readable height while the IR keeps IR_LINES lines (1600x1000 is; 1280x800 is not)."""
    shown = [d for d in window.tabifiedDockWidgets(dock) if d.isVisible() and not d.visibleRegion().isEmpty()]
    current = shown[0].height() if shown else 0
    spare = ir_view.viewport().height() - IR_LINES * ir_view.fontMetrics().lineSpacing()
    if dock.isVisible() and current + spare >= readable_height(dock):
        dock.raise_()


def readable_height(dock: QtWidgets.QDockWidget) -> int:
    """The height at which the dock's contents need no scrolling (its title and tabs included)."""
    inner = dock_contents(dock)
    return (inner.minimumSizeHint().height() if inner is not None else 0) + 64


def bring_to_front(dock: QtWidgets.QDockWidget) -> None:
    """Show `dock` and make it the tab on show of its group. Qt selects the tab when the dock's z-order
    changes, and `raise_()` on the main window's last child changes nothing (the last dock raised, or
    created, stays behind another tab): lowered first, the raise always moves it."""
    dock.show()
    dock.lower()
    dock.raise_()


def show_readable(window: QtWidgets.QMainWindow, dock: QtWidgets.QDockWidget) -> None:
    """Raise `dock` and, docked, grow it (up to half the window) until its contents need no scrolling:
    a tool opened from the View menu or its tab is readable at once, not a strip."""
    bring_to_front(dock)
    if dock.isFloating():
        return
    area = window.dockWidgetArea(dock)
    vertical = area in (Area.BottomDockWidgetArea, Area.TopDockWidgetArea)
    have = dock.height() if vertical else dock.width()
    limit = (window.height() if vertical else window.width()) // 2
    want = min(readable_height(dock) if vertical else dock_contents(dock).minimumSizeHint().width() + 24, limit)
    if have < want:
        window.resizeDocks([dock], [want], QtCore.Qt.Orientation.Vertical if vertical
                           else QtCore.Qt.Orientation.Horizontal)


def fit_to_screen(window: QtWidgets.QWidget) -> None:
    """Shrink and move the window so that its frame lies on the screen it opens on."""
    screen = available_screen(window)
    frame = window.frameGeometry()
    extra_w, extra_h = frame.width() - window.width(), frame.height() - window.height()
    width = min(window.width(), screen.width() - extra_w)
    height = min(window.height(), screen.height() - extra_h)
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    x = min(max(frame.x(), screen.x()), screen.right() + 1 - width - extra_w)
    y = min(max(frame.y(), screen.y()), screen.bottom() + 1 - height - extra_h)
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


def save_layout(window: QtWidgets.QMainWindow, settings: QtCore.QSettings) -> None:
    settings.setValue(VERSION_KEY, LAYOUT_VERSION)
    settings.setValue(STATE_KEY, window.saveState(LAYOUT_VERSION))
    settings.setValue(GEOMETRY_KEY, window.saveGeometry())


def restore_layout(window: QtWidgets.QMainWindow, settings: QtCore.QSettings) -> bool:
    """The saved layout if it is of this version and Qt accepts it; else False (the default stays)."""
    try:
        version = int(settings.value(VERSION_KEY, -1))
    except (TypeError, ValueError):
        version = -1
    state, geometry = settings.value(STATE_KEY), settings.value(GEOMETRY_KEY)
    if version != LAYOUT_VERSION or not isinstance(state, QtCore.QByteArray):
        return False
    if isinstance(geometry, QtCore.QByteArray):
        window.restoreGeometry(geometry)
    if not window.restoreState(state, LAYOUT_VERSION):
        apply_default_layout(window)
        return False
    return True


def scrolling_timeline(timeline: QtWidgets.QWidget) -> QtWidgets.QScrollArea:
    """The phase timeline keeps its segments readable and scrolls sideways instead of widening the window."""
    scroller = QtWidgets.QScrollArea()
    scroller.setObjectName("timelineScroll")
    scroller.setWidget(timeline)
    scroller.setWidgetResizable(True)
    scroller.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    scroller.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    bar = scroller.horizontalScrollBar().sizeHint().height()
    scroller.setFixedHeight(timeline.minimumSizeHint().height() + bar)
    return scroller
