"""The desktop app: `npu-studio [FILE_OR_WORKSPACE ...]` (arguments parsed in app_args.py)."""

from __future__ import annotations

import argparse
import os
import sys

from .qt_platform import xcb_problem
from .resources import APP_ID, ICON_PNG_SIZES, ICON_SVG, icon_png
from .verbosity import log_to_stderr


def app_icon():
    """The application icon: the PNG sizes, and the SVG for anything larger."""
    from PySide6 import QtCore, QtGui

    icon = QtGui.QIcon()
    for size in ICON_PNG_SIZES:
        icon.addFile(str(icon_png(size)), QtCore.QSize(size, size))
    icon.addFile(str(ICON_SVG))
    return icon


def has_display(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def run(args: argparse.Namespace) -> int:
    log_to_stderr(getattr(args, "verbose", 0))  # -v: each tool run on stderr too, besides the Log dock
    if args.self_test and "QT_QPA_PLATFORM" not in os.environ and not has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # CI, a bundle check over ssh
    problem = xcb_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    from PySide6 import QtWidgets

    from .ui.main_window import APP, ORG, MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    app.setDesktopFileName(APP_ID)
    app.setWindowIcon(app_icon())
    from .ui.gui_gc import GuiThreadCollector

    GuiThreadCollector(app)  # worker threads never free Qt objects (see gui_gc)
    if args.self_test:
        from .self_test import run_self_test

        return run_self_test(app)
    if args.screenshot is not None:
        from .ui.screenshot import take_screenshot

        return take_screenshot(app, args)
    windows = []
    for path in args.paths or [None]:
        window = MainWindow()
        window.show()
        if path is not None:
            window.open_path(path, args.workspace)
        else:
            window.opener.restore_last_after_paint(window.settings)  # the last close's workspace, phase, dispatch
        windows.append(window)
    return app.exec()


def main(argv: list[str] | None = None) -> int:
    """`npu-studio-gui`: the app only (no headless commands)."""
    from .app_args import parse_app_args

    return run(parse_app_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
