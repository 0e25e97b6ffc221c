"""Every UI area, built from `(session, studio, shell)`, and the few signals that pass between them.

The one place where areas meet: each is built against the narrow shell (shell.py), and where one
area's result is shown by another (the numerics trace's error column in the dispatch table, the
compile profile's top passes on the timeline), the link is a signal connected here, not a
reference one area keeps to another. A clicked Pareto point's schedule shows in a schedule dock of
the sweep's own, never in place of the open model's. Where each dock opens by default is layout.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6 import QtCore

from ..core.session import Session
from .assembly.controller import AssemblyController
from .assembly.dock import AssemblyDock
from .compile_debug.compare_dock import CompareDock
from .compile_debug.profile_dock import ProfileDock
from .dialog_folders import DialogFolders
from .dispatches.binding import DispatchBinding
from .dispatches.panel import DispatchPanel
from .edit.controller import EditController
from .edit.ir_pane import IrPane
from .executables.view import ExecutablesPanel
from .graph.area import GraphArea
from .module.controller import ModuleController
from .module.dock import ModuleDock
from .npu.panel import NpuPanel
from .schedule.controller import ScheduleController
from .schedule.dock import ScheduleDock
from .shell import Shell
from .studio import Studio
from .sweep.dock import SweepController, SweepDock
from .timeline import PhaseTimeline
from .trace.controller import TraceController
from .trace.extract_action import ExtractAction
from .trace.dock import TraceDock

Area = QtCore.Qt.DockWidgetArea


@dataclass
class Areas:
    ir: IrPane
    dispatch_panel: DispatchPanel
    dispatches: DispatchBinding
    npu: NpuPanel
    schedule: ScheduleDock
    schedule_controller: ScheduleController
    executables: ExecutablesPanel
    compile_profile: ProfileDock
    compare_builds: CompareDock
    sweep: SweepDock
    sweep_controller: SweepController
    trace_dock: TraceDock
    trace: TraceController
    extract: ExtractAction
    module_dock: ModuleDock
    module: ModuleController
    assembly_dock: AssemblyDock
    assembly: AssemblyController
    edit: EditController
    graph: GraphArea
    dialog_folders: DialogFolders


def central_areas(session: Session, studio: Studio, shell: Shell) -> tuple[IrPane, DispatchPanel, DispatchBinding]:
    """The two areas the central splitter holds: the IR pane and the dispatch panel."""
    panel = DispatchPanel()
    binding = DispatchBinding(session, studio, panel)  # first: a new workspace clears the table before a phase shows
    return IrPane(session, studio, shell), panel, binding


def build_areas(session: Session, studio: Studio, shell: Shell, settings: QtCore.QSettings,
                central: tuple[IrPane, DispatchPanel, DispatchBinding], timeline: PhaseTimeline) -> Areas:
    ir, dispatch_panel, dispatches = central
    parent = shell.parent_widget()
    npu = NpuPanel(session, studio, settings, parent)
    shell.add_menu(npu.menu)
    shell.add_toolbar(npu.toolbar)
    shell.add_dock(npu.dock, Area.RightDockWidgetArea, visible=False)
    schedule = ScheduleDock(parent)
    schedule_controller = ScheduleController(session, studio.jobs, schedule, parent)
    shell.add_dock(schedule, Area.BottomDockWidgetArea)
    executables = ExecutablesPanel(session, studio, shell)
    compile_profile, compare_builds = ProfileDock(session, studio, shell), CompareDock(session, studio, shell)
    compile_profile.sig_phase_notes.connect(
        lambda notes: [timeline.set_phase_note(phase, note) for phase, note in notes.items()])
    compile_profile.sig_finished.connect(executables.refresh)  # its compile-time column
    # every file dialog starts in the open workspace (else the last folder chosen, else home)
    dialog_folders = DialogFolders(settings, lambda: session.workspace.root if session.workspace else None)
    sweep = SweepDock(parent, dialog_folders)
    sweep_point = ScheduleDock(parent)
    sweep_point.setObjectName("sweep_point_dock")
    sweep_controller = SweepController(studio.jobs, sweep, sweep_point, parent)
    shell.add_dock(sweep, Area.BottomDockWidgetArea, visible=False)
    shell.add_dock(sweep_point, Area.BottomDockWidgetArea, visible=False)
    trace_dock = TraceDock(parent)
    trace = TraceController(session, studio.jobs, trace_dock, parent)
    trace.sig_dispatch_column.connect(dispatches.set_trace_column)
    extract = ExtractAction(session, studio, shell)
    module_dock = ModuleDock(parent)
    module = ModuleController(session, studio.jobs, module_dock, parent)
    for dock in (trace_dock, module_dock):
        shell.add_dock(dock, Area.BottomDockWidgetArea)
    assembly_dock = AssemblyDock(parent)
    assembly = AssemblyController(session, studio.jobs, assembly_dock, parent)
    shell.add_dock(assembly_dock, Area.BottomDockWidgetArea, visible=False)
    for controller in (schedule_controller, trace, module, sweep_controller, assembly):
        controller.sig_message.connect(shell.append_log)
    edit = EditController(session, studio, shell, ir)
    graph = GraphArea(session, studio, shell)
    graph.sig_message.connect(shell.append_log)
    trace.sig_dispatch_column.connect(lambda *_column: graph.set_trace(trace.report))  # the error overlay
    schedule_controller.sig_simulated.connect(graph.set_simulation)  # cycles and SRAM overlays
    return Areas(ir, dispatch_panel, dispatches, npu, schedule, schedule_controller, executables, compile_profile,
                 compare_builds, sweep, sweep_controller, trace_dock, trace, extract, module_dock, module,
                 assembly_dock, assembly, edit, graph, dialog_folders)
