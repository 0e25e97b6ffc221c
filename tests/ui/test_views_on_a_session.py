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
    TimelineBinding(timeline, session, lambda: {})
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
