"""Views built around a plain session, without the main window (as napari builds QtDims(Dims(...)))."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore  # noqa: E402

from npu_studio.core.ir.dispatch_index import index_workspace_phases  # noqa: E402
from npu_studio.core.npu.target import target_store  # noqa: E402
from npu_studio.core.session import Session  # noqa: E402
from npu_studio.core.workspace.workspace import Workspace  # noqa: E402
from npu_studio.resources import TARGETS_DIR  # noqa: E402
from npu_studio.ui.npu.panel import NpuPanel  # noqa: E402
from npu_studio.ui.studio import Studio  # noqa: E402
from npu_studio.ui.timeline import PhaseTimeline  # noqa: E402
from npu_studio.ui.timeline_binding import TimelineBinding  # noqa: E402


def test_the_target_picker_follows_the_session(qtbot, tmp_path):
    session = Session()
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    panel = NpuPanel(session, Studio(session), settings)
    picker = panel.picker
    assert [picker.itemText(i) for i in range(picker.count())] == ["default (bundled)", "tiny (bundled)"]
    mine = target_store.save_edit((TARGETS_DIR / "tiny.toml").read_text(), TARGETS_DIR / "tiny.toml")
    session.set_target(mine)  # no workspace: nothing to run, the picker still follows
    assert picker.currentText() == "tiny-edited (user)" and picker.count() == 3
    assert settings.value("npu/target") == str(mine)


def test_the_timeline_follows_the_session(qtbot, example_workspace):
    session = Session()
    timeline = PhaseTimeline()
    qtbot.addWidget(timeline)
    TimelineBinding(timeline, session)
    assert timeline.phases()[timeline.phases().index("flow") + 1] == "npu"
    session.open_workspace(Workspace.open(example_workspace.root))
    assert timeline.phase_info("flow").state == "done" and timeline.phase_info("npu").state == "pending"
    session.set_indexes(index_workspace_phases(example_workspace.snapshots()), {}, session.begin("index"))
    assert timeline.phase_info("flow").dispatches == 1
    gen = session.begin("compile")
    session.compile_started("stream", gen)
    session.compile_progress(None, "executable-sources", gen)
    assert timeline.phase_info("executable-sources").state == "running"
    session.compile_failed(gen, cancelled=False)
    assert timeline.phase_info("vm").state == "failed" and timeline.phase_info("flow").state == "done"
    session.clear()
    assert {timeline.phase_info(p).state for p in timeline.phases()} == {"pending"}


class RecordingShell:
    """The narrow shell (ui/shell.py) without a main window: what the areas ask of it, recorded."""

    def __init__(self, studio: Studio):
        from PySide6 import QtWidgets

        self.jobs = studio.jobs
        self._parent = QtWidgets.QWidget()
        self.docks, self.statuses, self.logs, self.errors, self.dispatch_actions = [], [], [], [], []

    def parent_widget(self):
        return self._parent

    def add_dock(self, dock, area=None, visible=True):
        self.docks.append(dock)

    def add_menu(self, menu):
        from PySide6 import QtWidgets

        return menu if isinstance(menu, QtWidgets.QMenu) else QtWidgets.QMenu(menu, self._parent)

    def add_toolbar(self, toolbar):
        pass

    def add_dispatch_action(self, action, on_double_click=False):
        self.dispatch_actions.append(action)

    def set_status(self, text):
        self.statuses.append(text)

    def append_log(self, text, error=False):
        self.logs.append(text)

    def show_error(self, message, condition="general"):
        self.errors.append(message)


def test_the_ir_pane_and_the_table_follow_one_selection_redrawing_once(qtbot, example_workspace):
    from npu_studio.ui.areas import central_areas

    session = Session()
    studio = Studio(session)
    shell = RecordingShell(studio)
    pane, panel, binding = central_areas(session, studio, shell)
    qtbot.addWidget(shell.parent_widget())
    session.open_workspace(Workspace.open(example_workspace.root))
    session.set_indexes(index_workspace_phases(example_workspace.snapshots()), {}, session.begin("index"))
    assert session.selection.phase == "flow"  # the pane shows flow when a workspace opens
    assert pane.view.text() == example_workspace.snapshot_path("flow").read_text(encoding="utf-8")
    drawn, shown = [], []
    real_set_index, real_show_record = panel.table.set_index, panel.show_record
    panel.table.set_index = lambda *a: (drawn.append(a), real_set_index(*a))
    panel.show_record = lambda *a: (shown.append(a), real_show_record(*a))
    # A click in the table selects in the session; the table is not refilled, the detail drawn once.
    panel.sig_dispatch_selected.emit(0)
    assert session.selection.dispatch == 0 and pane.view.marked_key() == 0
    assert (len(drawn), len(shown)) == (0, 1)
    # Another phase: the table is refilled once, the dispatch stays selected and marked in the new text.
    pane.show_phase("stream")
    assert (len(drawn), len(shown)) == (1, 2)
    assert session.selection.dispatch == 0 and pane.view.marked_key() == 0
    assert "stream" in pane.phase_label.text() and not shell.errors
