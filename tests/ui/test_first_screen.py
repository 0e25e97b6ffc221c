"""The first screen helps; actions act or are disabled; exports start in the workspace and say where they wrote."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def test_the_first_screen_says_what_and_how_and_nothing_dead_is_enabled(window):
    page = window.welcome
    text = " ".join(w.text() for w in page.findChildren(type(window.phase_label)))
    assert "IREE" in text and "NPU" in text  # what the app does
    assert "drop" in text.lower() and "File ▸ Open" in text  # how to start
    assert window.pages.currentWidget() is page
    assert not window.compile_action.isEnabled() and not window.resume_action.isEnabled()
    assert not window.edit_action.isEnabled() and not window.npu.run_action.isEnabled()
    dock = window.schedule
    assert all(not a.isEnabled() for a in dock.run_actions)  # no run: its buttons cannot act
    assert dock.empty_reason().startswith("No model open")
    assert not window.recent_menu.isEnabled()


def test_exports_start_in_the_workspace_and_confirm_where_they_wrote(window, qtbot, fresh_example):
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    qtbot.waitUntil(lambda: window.schedule_controller.run is not None, timeout=120_000)
    dock = window.schedule
    assert all(a.isEnabled() for a in dock.run_actions)
    for kind, suffix in (("csv", "-schedule.csv"), ("png", "-schedule.png"), ("trace", "-schedule.trace.json")):
        path = dock.suggested_export_path(kind)
        assert path == str(fresh_example.root / f"single_conv{suffix}")
        dock.export(kind, path)
        assert os.path.getsize(path) > 0
        assert dock.check_label.isVisible() and path in dock.check_label.full_text()
    with open(dock.suggested_export_path("png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
