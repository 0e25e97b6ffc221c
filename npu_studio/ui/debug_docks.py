"""The model-debugging docks (numerics against ONNX, module contents), added to the main window."""

from __future__ import annotations

from PySide6 import QtCore

from .module.controller import ModuleController
from .module.dock import ModuleDock
from .trace.controller import TraceController
from .trace.dock import TraceDock


def install_debug_docks(window) -> None:
    """Tabbed with the log: `window.trace_dock` / `window.trace`, `window.module_dock` / `window.module`."""
    window.trace_dock = TraceDock(window)
    window.trace = TraceController(window.session, window.jobs, window.trace_dock, window.dispatches, window)
    window.module_dock = ModuleDock(window)
    window.module = ModuleController(window.session, window.jobs, window.module_dock, window)
    for dock, controller in ((window.trace_dock, window.trace), (window.module_dock, window.module)):
        window.add_dock(dock, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
        window.tabifyDockWidget(window.log_dock, dock)
        controller.sig_message.connect(window.log.append_text)
