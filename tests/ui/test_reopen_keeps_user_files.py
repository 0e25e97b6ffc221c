"""Opening the same model again (File > Open, a drop, Open Recent) reopens its workspace as it was:
nothing compiles (the job log says so), the resumed edit stays in the build, the user's files stay.
A changed model shows its previous build with a banner offering Recompile; a failed open brings
back the model that was open; a restart restores the workspace, phase and dispatch."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore

from npu_studio.core.workspace.workspace import Workspace, default_workspace_for
from npu_studio.ui.main_window import MainWindow

from ..conftest import EXAMPLE
from ..core.bad_models import write_bad_models
from ..core.test_workspace_transactions import add_user_files, assert_kept, relu_model
from .test_main_window import drop


def test_reopening_after_a_resume_keeps_the_edit_in_the_build_and_compiles_nothing(window, qtbot, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "home"))
    model = relu_model(tmp_path / "relu.onnx")
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.open_path(model)  # File > Open
    assert done.args == [True]
    root = default_workspace_for(model)
    edited = "// mine\n" + Workspace.open(root).snapshot_path("input").read_text()
    window.show_phase("input")
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        assert window.studio.resume("input", edited)  # Resume from this phase, in the app
    assert done.args == [True]
    ws = Workspace.open(root)
    edit = root / ws.manifest.edits[-1]["file"]
    files = {str(edit.relative_to(root)): edit.read_bytes(), **add_user_files(root)}
    # npu/target.toml is the app's record of the target its NPU results were built with: each NPU run
    # (the reopen runs one) writes it. Everything else is the user's and must stay byte for byte.
    files.pop("npu/target.toml")
    vmfb = (root / ws.manifest.vmfb).read_bytes()
    recent = window.recent_menu.actions()[0]
    assert recent.data() == str(model) and recent.text() == f"relu.onnx — {tmp_path}"  # name and folder
    for reopen in (lambda: drop(window, model), lambda: window.recent_menu.actions()[0].trigger()):
        window.jobs.history.clear()
        with qtbot.waitSignal(window.sig_index_finished, timeout=60_000):
            reopen()
        assert "compile" not in window.jobs.history, window.jobs.history
        assert_kept(root, files)
        assert (root / Workspace.open(root).manifest.vmfb).read_bytes() == vmfb  # the same build
        window.show_phase("input")
        assert window.ir_view.text() == edited  # the resumed edit is the build's input phase
        assert window.timeline.phase_info("input").state == "edited"
        assert not window.error_banner.isVisible()


def test_a_changed_model_shows_its_previous_build_and_offers_recompile(window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "home"))
    model = relu_model(tmp_path / "relu.onnx")
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000):
        window.open_path(model)
    model.write_bytes(EXAMPLE.read_bytes())  # re-exported in place: another model under the same name
    window.jobs.history.clear()
    window.open_path(model)
    assert "compile" not in window.jobs.history
    banner = window.error_banner.text()
    assert window.error_banner.isVisible() and "has changed" in banner and "Recompile" in banner
    assert "edits" in banner and "rebuilt" in banner  # what a recompile keeps and what it replaces
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.error_banner.linkActivated.emit("recompile")
    assert done.args == [True]
    assert not window.error_banner.isVisible()  # the condition ended: the banner went with it
    assert "Conv" in window.workspace.imported_path.read_text()  # the new model's content was imported


def test_a_failed_open_keeps_the_current_model_and_stays_out_of_recent(window, qtbot, tmp_path, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=60_000):
        window.open_path(fresh_example.root)
    window.show_phase("flow")
    window.select_dispatch(0)
    bad = write_bad_models(tmp_path, EXAMPLE)["truncated"]
    with qtbot.waitSignal(window.sig_compile_finished, timeout=60_000) as done:
        window.open_path(bad)
    assert done.args == [False]
    qtbot.waitUntil(lambda: window.workspace is not None, timeout=10_000)
    assert window.workspace.root == fresh_example.root
    assert window.windowTitle().startswith(fresh_example.user_model_path.name)
    assert window.current_phase == "flow" and "flow.executable" in window.ir_view.text()
    assert window.error_banner.isVisible() and str(bad) in window.error_banner.text()
    assert str(bad) not in window.recent_files()
    assert window.recent_files()[0] == str(fresh_example.root)


def test_a_restart_restores_the_workspace_phase_and_dispatch(qtbot, tmp_path, fresh_example):
    settings_path = str(tmp_path / "settings.ini")
    first = MainWindow(QtCore.QSettings(settings_path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    first.show()
    with qtbot.waitSignal(first.sig_index_finished, timeout=60_000):
        first.open_path(fresh_example.root)
    first.show_phase("dispatch-creation")
    first.select_dispatch(0)
    first.close()

    second = MainWindow(QtCore.QSettings(settings_path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    second.show()
    with qtbot.waitSignal(second.sig_index_finished, timeout=60_000):
        assert second.restore_last_session()
    assert second.workspace.root == fresh_example.root
    assert second.current_phase == "dispatch-creation" and second.selected_dispatch == 0
    assert second.timeline.selected() == "dispatch-creation"
    assert "compile" not in second.jobs.history
    second.jobs.stop_all()
