"""The tools' docks, added to the main window: compile profile and build comparison, numerics against
ONNX and module contents, design-space sweeps. Where each opens by default is layout.py's."""

from __future__ import annotations

from PySide6 import QtCore

from .compile_debug.compare_dock import CompareDock
from .compile_debug.profile_dock import ProfileDock
from .module.controller import ModuleController
from .module.dock import ModuleDock
from .sweep.dock import SweepController, SweepDock
from .trace.controller import TraceController
from .trace.dock import TraceDock


def install_tool_docks(window) -> None:
    """Sets `window.compile_profile`, `compare_builds`, `trace_dock`/`trace`, `module_dock`/`module`,
    `sweep`/`sweep_controller` (a clicked Pareto point opens its schedule in the schedule dock)."""
    window.compile_profile, window.compare_builds = ProfileDock(window), CompareDock(window)
    window.sweep = SweepDock(window)
    window.sweep_controller = SweepController(window.jobs, window.sweep, window.schedule_controller, window)
    window.add_dock(window.sweep, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, visible=False)
    window.trace_dock = TraceDock(window)
    window.trace = TraceController(window.session, window.jobs, window.trace_dock, window.dispatches, window)
    window.module_dock = ModuleDock(window)
    window.module = ModuleController(window.session, window.jobs, window.module_dock, window)
    for dock in (window.trace_dock, window.module_dock):
        window.add_dock(dock, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    for controller in (window.trace, window.module, window.sweep_controller):
        controller.sig_message.connect(window.log.append_text)
