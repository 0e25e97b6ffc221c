"""The menu bar reads File, Edit, View, NPU, Help; Help shows the shipped docs, the window's own shortcuts
and the versions; actions that cannot act without a model are disabled; the welcome text is whole."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.resources import DOCS_DIR


def test_menus_in_the_order_users_expect(window):
    assert [a.text() for a in window.menuBar().actions()] == ["&File", "&Edit", "&View", "&NPU", "&Help"]
    edit = window.menuBar().actions()[1].menu()
    assert "&Diff…" in [a.text() for a in edit.actions()]  # the edit area's actions are in the window's Edit


def test_help_documentation_shows_the_shipped_docs_and_follows_links(window, qtbot):
    from npu_studio.ui.help_menu import DocsDialog

    dialog = DocsDialog(window)
    qtbot.addWidget(dialog)
    names = [dialog.list.item(i).text() for i in range(dialog.list.count())]
    assert names == sorted(p.name for p in DOCS_DIR.glob("*.md")) and "model-debugging.md" in names
    first_heading = (DOCS_DIR / "model-debugging.md").read_text().splitlines()[0].lstrip("# ")
    assert dialog.view.toPlainText().startswith(first_heading)
    dialog._follow(QtCore.QUrl("sweep.md"))  # a link to another doc opens inside
    assert dialog.list.currentItem().text() == "sweep.md"
    room = window.screen().availableGeometry()
    assert dialog.width() <= room.width() and dialog.height() <= room.height()


def test_keyboard_shortcuts_are_read_from_the_actions(window):
    from npu_studio.ui.help_menu import shortcut_rows

    rows = dict(shortcut_rows(window))
    assert rows["Open"] == QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Open).toString(
        QtGui.QKeySequence.SequenceFormat.NativeText)
    assert rows["Compile"] == "Ctrl+B" and rows["Diff"] == "Ctrl+D"
    window.compile_action.setShortcut("Ctrl+Shift+K")  # a changed shortcut shows as it is
    assert dict(shortcut_rows(window))["Compile"] == "Ctrl+Shift+K"


def test_about_names_our_version_and_iree(window, monkeypatch):
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "about", lambda parent, title, text: shown.append(text))
    about = next(a for a in window.help_menu.actions() if a.text() == "&About NPU Studio")
    about.trigger()
    assert "npu-studio" in shown[0] and "IREE compiler version" in shown[0]


def test_without_a_model_the_actions_that_need_one_are_disabled(window, qtbot, fresh_example):
    controller = window.edit_controller
    needs_model = [window.npu.run_on_npu_action, window.npu.run_standalone_action, window.schedule.measure_action,
                   controller.diff_action, controller.passes_action, controller.dispatch_diff_action]
    assert not [a.text() for a in needs_model if a.isEnabled()]
    with qtbot.waitSignal(window.sig_index_finished, timeout=60_000):
        window.open_path(fresh_example.root)
    window.show_phase("flow")
    window.select_dispatch(0)
    assert [a.text() for a in needs_model if not a.isEnabled()] == []


def test_the_welcome_text_is_shown_whole(window):
    about = next(label for label in window.welcome.findChildren(QtWidgets.QLabel) if "Compile a model" in label.text())
    assert about.height() >= about.heightForWidth(about.width())
