"""Where Open and Run sweep start: the open workspace, else the last folder chosen, else home; never
inside the installed package. The file dialogs are replaced by recorders of the folder they were given."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6 import QtWidgets

from npu_studio.resources import RESOURCES


@pytest.fixture
def asked(monkeypatch):
    """Each dialog's (title, folder); the user picks `asked.answer`, or cancels when it is ''."""
    record = SimpleNamespace(calls=[], answer="")

    def open_file(parent, title, folder="", *args, **kwargs):
        record.calls.append((title, folder))
        return record.answer, ""

    def open_folder(parent, title, folder="", *args, **kwargs):
        record.calls.append((title, folder))
        return record.answer

    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName", staticmethod(open_file))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", staticmethod(open_folder))
    return record


def test_with_no_workspace_open_and_no_folder_chosen_the_dialogs_start_at_home(window, asked, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    window.open_dialog()
    window.sweep._ask_run()
    assert asked.calls == [("Open model", str(tmp_path / "home")), ("Run sweep", str(tmp_path / "home"))]
    assert all(not Path(folder).resolve().is_relative_to(RESOURCES.resolve()) for _, folder in asked.calls)


def test_the_last_folder_chosen_is_where_the_next_dialog_starts_but_never_the_package(window, asked, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    specs = tmp_path / "specs"
    specs.mkdir()
    asked.answer = str(specs / "missing.toml")  # the run fails with a banner: what matters is the folder
    window.sweep._ask_run()
    asked.answer = ""
    window.open_dialog()
    assert asked.calls[-1] == ("Open model", str(specs))
    asked.answer = str(RESOURCES / "examples" / "single_conv.onnx")  # chosen inside the package: not kept
    window.sweep.folders.remember(asked.answer)
    window.sweep._ask_run()
    assert asked.calls[-1] == ("Run sweep", str(specs))
    window.jobs.stop_all()


def test_with_a_workspace_open_open_and_run_sweep_start_in_it(window, asked, qtbot, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=60_000):
        window.open_path(fresh_example.root)
    window.open_dialog()
    window.open_workspace_dialog()
    window.sweep._ask_run()
    window.sweep._ask_open()
    root = str(fresh_example.root)
    assert asked.calls == [("Open model", root), ("Open workspace", root), ("Run sweep", root),
                           ("Open sweep results", root)]
