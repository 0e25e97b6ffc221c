"""States that agree (issue 37, item 4): a banner goes with its cause (Cancel brings the previous build
back; another model opens), and the status bar names the model that is open."""

from __future__ import annotations

import os
import shutil
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtWidgets


def wait_until(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        QtWidgets.QApplication.processEvents()
        time.sleep(0.02)


def open_and_settle(window, qtbot, root) -> None:
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(root)
    wait_until(lambda: not window.jobs.is_running())


def test_cancel_brings_the_previous_build_back_and_the_stale_mark_goes(window, qtbot, example_workspace, tmp_path):
    root = tmp_path / "a"
    shutil.copytree(example_workspace.root, root)
    open_and_settle(window, qtbot, root)
    dock = window.schedule
    dock.show()
    assert dock.model is not None and not dock.is_stale()
    with qtbot.waitSignal(window.sig_compile_finished, timeout=120_000) as done:
        window.compile_action.trigger()  # Compile
        assert dock.is_stale() and "stale" in dock.banner.full_text()  # the build is being replaced
        window.cancel_action.trigger()  # Cancel, before the import has finished
    assert done.args == [False]
    wait_until(lambda: not window.jobs.is_running())
    assert window.session.npu_state() == "done"  # the previous build is back ...
    assert not dock.is_stale(), dock.banner.full_text()  # ... and nothing says it is stale


def test_reopening_another_model_names_it_in_the_status_bar_and_clears_the_banners(window, qtbot,
                                                                                   example_workspace, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(example_workspace.root, first)
    shutil.copytree(example_workspace.root, second)
    open_and_settle(window, qtbot, first)
    with qtbot.waitSignal(window.sig_compile_finished, timeout=120_000) as done:
        window.compile_action.trigger()
    assert done.args == [True]
    wait_until(lambda: not window.jobs.is_running())
    assert str(first) in window.status_label.text()  # "Compiled in … — first"
    (tmp_path / "notes.txt").write_text("not a model")
    window.open_path(tmp_path / "notes.txt")  # a failed open: its banner
    assert window.error_banner.isVisible()
    open_and_settle(window, qtbot, second)
    assert str(second) in window.status_label.text() and str(first) not in window.status_label.text()
    assert not window.error_banner.isVisible()
    assert not window.schedule.is_stale()
