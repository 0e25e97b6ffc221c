"""Can Qt's xcb platform plugin load here? Checked before the QApplication exists.

On a minimal Debian the PySide6 wheel's xcb plugin lacks X11 client libraries
(libxcb-cursor0, libxcb-icccm4, ...) and Qt aborts with a long message that does
not name them. We try to load the plugin ourselves first and, if the loader
refuses, print the one `apt-get install` line that fixes it. No Qt import here.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path

# Debian packages of the libraries the xcb plugin and the Qt libraries under it
# load that a minimal Debian does not have (tests/packaging/test_system_packages.py
# checks this against ldd and dpkg); apt brings in what these depend on.
APT_PACKAGES = (
    "libdbus-1-3", "libegl1", "libfontconfig1", "libgl1", "libglib2.0-0",
    "libx11-xcb1", "libxcb-cursor0", "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1",
    "libxcb-randr0", "libxcb-render-util0", "libxcb-shape0", "libxcb-xkb1", "libxkbcommon-x11-0",
)
APT_LINE = "sudo apt-get install " + " ".join(APT_PACKAGES)


def platform_qt_will_use(environ=None) -> str | None:
    """The platform plugin Qt picks: QT_QPA_PLATFORM's first entry, else xcb on an X11 Linux."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("QT_QPA_PLATFORM", "").strip()
    if explicit:
        return explicit.split(";")[0].split(":")[0]
    if not sys.platform.startswith("linux"):
        return None
    if environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland":
        return "wayland"
    return "xcb"


def xcb_plugin_path() -> Path | None:
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "Qt" / "plugins" / "platforms" / "libqxcb.so"


def xcb_problem(environ=None, plugin: Path | None = None) -> str | None:
    """None when Qt's window system plugin will load (or is not xcb); else the message to print."""
    if platform_qt_will_use(environ) != "xcb":
        return None
    plugin = plugin or xcb_plugin_path()
    if plugin is None or not plugin.exists():
        return None  # not the layout we know: let Qt speak for itself
    try:
        ctypes.CDLL(str(plugin))
    except OSError as exc:
        reason = str(exc).split(": ", 1)[-1] if str(plugin) in str(exc) else str(exc)
        return (f"npu-studio: Qt's window system plugin (xcb) cannot load: {reason}\n"
                f"Install the X11 libraries it needs with:\n  {APT_LINE}")
    return None
