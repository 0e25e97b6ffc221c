""""Extract reproducer…" on a dispatch row of the real main window: the folder it writes runs with IREE's tools alone.

Truth: run.sh in a fresh shell (only the venv's bin and the system's on PATH),
whose exit code is iree-run-module's own byte-for-byte compare.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.workspace.workspace import compile_model
from tests.core.debug.test_extract import CONV, _run_sh, conv_relu_matmul

from .test_npu_in_app import WAIT, make_window, open_workspace


@pytest.fixture
def window(qtbot, tmp_path):
    ws = compile_model(conv_relu_matmul(tmp_path / "crm.onnx"), tmp_path / "ws")
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    open_workspace(w, qtbot, ws)
    yield w
    w.jobs.stop_all()


def test_extract_reproducer_row_action_writes_a_runnable_folder(window, qtbot, tmp_path):
    action = window.extract.action
    assert action in window.dispatch_table.actions()  # on the row's context menu
    chosen = tmp_path / "picked"
    chosen.mkdir()
    (chosen / "dispatch-1-reproducer").mkdir()  # taken: the reproducer goes beside it, never into it
    window.extract.choose_folder = lambda index: chosen
    window.session.select_dispatch(CONV)
    with qtbot.waitSignal(window.extract.sig_done, timeout=WAIT) as done:
        action.trigger()
    repro = done.args[0]
    out = chosen / "dispatch-1-reproducer-2"
    assert repro.folder == str(out) and repro.index == CONV
    assert not any((chosen / "dispatch-1-reproducer").iterdir())
    assert f"extracted to {out}" in window.status_label.text()
    ran = _run_sh(out)
    assert ran.returncode == 0 and "reproduced" in ran.stdout, ran.stdout + ran.stderr
