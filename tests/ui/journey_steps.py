"""What a user does with the window, as mouse and key events at the positions of the shown widgets.

The journey test (test_journey.py) reads as the user's day; the mechanics of each gesture live here:
where a line of the IR is drawn, which toolbar button an action has, how a menu is walked, how a file
dialog is filled. Nothing here calls the window's slots: every step is a click, a move or a key.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

Key, Mod, Button = QtCore.Qt.Key, QtCore.Qt.KeyboardModifier, QtCore.Qt.MouseButton
WAIT_MS = 120_000


class Journey:
    def __init__(self, qtbot, settings: QtCore.QSettings, shots: Path):
        self.qtbot, self.settings, self.shots = qtbot, settings, shots
        shots.mkdir(parents=True, exist_ok=True)
        self.windows: list = []
        self.w = None
        self._shot = 0

    # -- the app ---------------------------------------------------------------------------

    def launch(self):
        """A new main window on the day's settings, shown and active, as `npu-studio` starts it."""
        from npu_studio.ui.main_window import MainWindow

        w = MainWindow(self.settings)
        self.qtbot.addWidget(w)
        self.windows.append(w)
        w.show()
        self.qtbot.waitExposed(w)
        w.activateWindow()
        self.qtbot.waitActive(w)
        self.w = w
        return w

    def relaunch(self):
        """A new main window on the same settings, restoring the last close's workspace as the app's start does."""
        w = self.launch()
        assert w.opener.restore_last_after_paint(self.settings), "nothing to restore"
        return w

    def close_all(self) -> None:
        for w in self.windows:
            w.session.drafts.clear()
            w.jobs.stop_all()

    def settle(self, seconds: float = WAIT_MS / 1000) -> None:
        """Until no job of the window has run for a few turns of the event loop (indexes, NPU, simulation)."""
        deadline, quiet = time.monotonic() + seconds, 0
        while quiet < 4:
            assert time.monotonic() < deadline, f"jobs still running: {self.w.jobs.history[-5:]}"
            self.qtbot.wait(25)
            quiet = 0 if self.w.jobs.is_running() or self.w.is_busy() else quiet + 1

    def shot(self, name: str, widget: QtWidgets.QWidget | None = None) -> Path:
        """The window (or a dialog) as the user sees it now, saved as NN-name.png."""
        QtWidgets.QApplication.processEvents()
        self._shot += 1
        path = self.shots / f"{self._shot:02d}-{name}.png"
        assert (widget or self.w).grab().save(str(path)), path
        return path

    def screen_shot(self, name: str) -> Path | None:
        """The whole screen (tooltips and popups included), where the platform can grab it (X11)."""
        QtWidgets.QApplication.processEvents()
        pixmap = self.w.screen().grabWindow(0)
        if pixmap.isNull() or pixmap.toImage().allGray() and pixmap.toImage().pixel(0, 0) == 0:
            return None
        self._shot += 1
        path = self.shots / f"{self._shot:02d}-{name}.png"
        pixmap.save(str(path))
        return path

    # -- keys and clicks ---------------------------------------------------------------------

    def focus_window(self, widget: QtWidgets.QWidget) -> None:
        """What a window manager does on a click: the widget's window becomes the active one (Xvfb has
        no window manager, and shortcuts only reach the active window)."""
        top = widget.window()
        if QtWidgets.QApplication.activeWindow() is not top:
            top.activateWindow()
            self.qtbot.waitUntil(lambda: QtWidgets.QApplication.activeWindow() is top, timeout=5000)

    def key(self, widget: QtWidgets.QWidget, key, modifiers=Mod.NoModifier) -> None:
        self.focus_window(widget)
        self.qtbot.keyClick(widget, key, modifiers)

    def type(self, widget: QtWidgets.QWidget, text: str) -> None:
        self.focus_window(widget)
        self.qtbot.keyClicks(widget, text)

    def click(self, widget: QtWidgets.QWidget, pos: QtCore.QPoint | None = None, double: bool = False) -> None:
        """A click (or double-click) at `pos` of `widget`, received by whatever is drawn on top there."""
        assert widget.isVisible(), f"{widget!r} is not on screen"
        pos = widget.rect().center() if pos is None else pos
        assert widget.rect().contains(pos), f"{pos} is outside {widget!r}"
        self.focus_window(widget)
        widget, pos = self.on_top(widget, pos)
        self.qtbot.mouseMove(widget, pos)
        self.qtbot.mouseClick(widget, Button.LeftButton, pos=pos)
        if double:
            self.qtbot.mouseDClick(widget, Button.LeftButton, pos=pos)

    @staticmethod
    def on_top(widget: QtWidgets.QWidget, pos: QtCore.QPoint) -> tuple[QtWidgets.QWidget, QtCore.QPoint]:
        """The widget a pointer at `pos` of `widget` is over (an overlay such as the table's frozen
        columns covers what is under it), and the position in it."""
        top = widget.window()
        hit = top.childAt(widget.mapTo(top, pos))
        if hit is None or hit is widget:
            return widget, pos
        return hit, hit.mapFrom(top, widget.mapTo(top, pos))

    def press(self, action: QtGui.QAction) -> None:
        """Click the toolbar button of `action`."""
        button = self.button_of(action)
        assert button is not None and button.isEnabled(), f"no enabled button for {action.text()!r}"
        self.click(button)

    def button_of(self, action: QtGui.QAction) -> QtWidgets.QWidget | None:
        for bar in self.w.findChildren(QtWidgets.QToolBar):
            button = bar.widgetForAction(action)
            if button is not None and button.isVisible():
                return button
        return None

    def menu(self, *titles: str) -> None:
        """Walk the menu bar: click the first title, hover each submenu, click the last entry."""
        bar = self.w.menuBar()
        action = next(a for a in bar.actions() if a.text().replace("&", "") == titles[0])
        self.click(bar, bar.actionGeometry(action).center())
        menu = action.menu()
        self.qtbot.waitUntil(menu.isVisible, timeout=5000)
        for title in titles[1:]:
            entry = next(a for a in menu.actions() if a.text().replace("&", "").startswith(title))
            pos = menu.actionGeometry(entry).center()
            if entry.menu() is not None:
                self.qtbot.mouseMove(menu, pos)
                self.qtbot.waitUntil(entry.menu().isVisible, timeout=5000)
                menu = entry.menu()
            else:
                self.qtbot.mouseClick(menu, Button.LeftButton, pos=pos)
        QtWidgets.QApplication.processEvents()

    def show_dock(self, dock: QtWidgets.QDockWidget) -> None:
        """Bring a dock to the front as a user does: its tab if it is a tab behind another, else View > its title."""
        if dock.isVisible() and not dock.visibleRegion().isEmpty():
            return
        title = dock.windowTitle()
        for bar in self.w.findChildren(QtWidgets.QTabBar):
            for i in range(bar.count()):
                if bar.tabText(i) == title and bar.isVisible():
                    self.click(bar, bar.tabRect(i).center())
                    self.qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty(), timeout=5000)
                    return
        self.menu("View", title)
        self.qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty(), timeout=5000)

    # -- the window's parts -------------------------------------------------------------------

    def click_phase(self, phase: str) -> None:
        self.click(self.w.timeline, self.w.timeline.segment_rect(phase).center())

    def row_of(self, dispatch: int) -> int:
        table = self.w.dispatch_table
        return next(r for r in range(table.rowCount())
                    if table.item(r, 0).data(QtCore.Qt.ItemDataRole.UserRole) == dispatch)

    def click_row(self, dispatch: int, double: bool = False) -> None:
        table = self.w.dispatch_table
        item = table.item(self.row_of(dispatch), 0)
        table.scrollToItem(item)
        self.click(table.viewport(), table.visualItemRect(item).center(), double=double)

    def line_rect(self, line: int, view=None) -> QtCore.QRect:
        """Where 1-based `line` of the IR view is drawn, in its viewport's coordinates."""
        view = view or self.w.ir_view
        block = view.document().findBlockByNumber(line - 1)
        return view.blockBoundingGeometry(block).translated(view.contentOffset()).toRect()

    def line_visible(self, line: int, view=None) -> bool:
        view = view or self.w.ir_view
        rect = self.line_rect(line, view)
        return rect.height() > 0 and rect.top() >= 0 and rect.bottom() <= view.viewport().height()

    def click_line(self, line: int, view=None) -> None:
        """Click into `line` (it must be on screen), just after its indentation."""
        view = view or self.w.ir_view
        assert self.line_visible(line, view), f"line {line} is not on screen"
        self.qtbot.wait(QtWidgets.QApplication.doubleClickInterval() + 20)  # not a double-click
        block = view.document().findBlockByNumber(line - 1)
        indent = len(block.text()) - len(block.text().lstrip())
        self.click(view.viewport(), self._char_pos(view, block.position() + indent))

    def double_click_text(self, needle: str, view=None, after: int = 0) -> int:
        """Double-click the word `needle` (first occurrence from `after`, on screen): selects it. Its position."""
        view = view or self.w.ir_view
        at = view.toPlainText().index(needle, after)
        line = view.document().findBlock(at).blockNumber() + 1
        assert self.line_visible(line, view), f"{needle!r} (line {line}) is not on screen"
        self.qtbot.wait(QtWidgets.QApplication.doubleClickInterval() + 20)
        self.click(view.viewport(), self._char_pos(view, at + len(needle) // 2), double=True)
        return at

    @staticmethod
    def _char_pos(view, position: int) -> QtCore.QPoint:
        cursor = QtGui.QTextCursor(view.document())
        cursor.setPosition(position)
        rect = view.cursorRect(cursor)
        return QtCore.QPoint(rect.x() + 2, rect.center().y())

    # -- dialogs --------------------------------------------------------------------------------

    def open_with_dialog(self, path: Path) -> None:
        """Ctrl+O, the path pasted into the dialog's file name field, then its Open button."""
        typed: list[str] = []
        started = time.monotonic()

        def fill() -> None:
            dialog = QtWidgets.QApplication.activeModalWidget()
            if not isinstance(dialog, QtWidgets.QFileDialog):
                if time.monotonic() - started < 20:
                    QtCore.QTimer.singleShot(50, fill)  # not shown yet
                return
            field = dialog.findChild(QtWidgets.QLineEdit, "fileNameEdit")
            # Pasted (Ctrl+V), as one edit: typed key by key, the completer's list pops up and
            # completes each folder on the way, and what it leaves in the field depends on timing.
            QtWidgets.QApplication.clipboard().setText(str(path))
            self.qtbot.keyClick(field, Key.Key_V, Mod.ControlModifier)
            if field.completer() is not None:
                field.completer().popup().hide()  # the completion list the typing opened
            buttons = dialog.findChild(QtWidgets.QDialogButtonBox)
            open_button = buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Open)
            typed.extend(dialog.selectedFiles())
            self.qtbot.mouseClick(open_button, Button.LeftButton)
            if dialog.isVisible():  # never hang the run on a dialog that did not take the path
                dialog.reject()

        QtCore.QTimer.singleShot(50, fill)
        self.key(self.w, Key.Key_O, Mod.ControlModifier)
        assert typed == [str(path)], typed
