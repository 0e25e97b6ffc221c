"""Opening the same model again in the app (File > Open, a drop, Open Recent) keeps the user's files."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.workspace.workspace import Workspace, default_workspace_for

from ..core.test_workspace_transactions import add_user_files, assert_kept, relu_model
from .test_main_window import drop


def test_reopening_a_model_keeps_edits_drafts_and_target(window, qtbot, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "home"))
    model = relu_model(tmp_path / "relu.onnx")
    with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
        window.open_path(model)  # File > Open
    assert done.args == [True]
    root = default_workspace_for(model)
    ws = Workspace.open(root)
    ws.resume("input", "// mine\n" + ws.snapshot_path("input").read_text())
    edit = root / ws.manifest.edits[-1]["file"]
    files = {str(edit.relative_to(root)): edit.read_bytes(), **add_user_files(root)}
    assert window.recent_menu.actions()[0].text() == str(model)
    for reopen in (lambda: drop(window, model), lambda: window.recent_menu.actions()[0].trigger()):
        with qtbot.waitSignal(window.sig_compile_finished, timeout=180_000) as done:
            reopen()
        assert done.args == [True]
        assert_kept(root, files)
