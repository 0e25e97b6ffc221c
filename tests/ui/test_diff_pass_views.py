"""The diff view and the pass view as widgets over core objects (no window)."""

from __future__ import annotations

import os
import subprocess
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.debug.phase_diff import workspace_diff
from npu_studio.core.ir.diff import diff_texts
from npu_studio.ui.edit.diff_view import DiffView


def test_side_by_side_rows_align_scroll_together_and_the_patch_applies(qtbot, example_workspace, tmp_path):
    ws = example_workspace
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(1000, 300)
    view.show()
    diff = workspace_diff(ws, "dispatch-creation", "flow")
    view.set_diff(diff)
    left, right = view.left, view.right
    assert left.blockCount() == right.blockCount() == len(diff.rows())
    # The first added row: padding on the left, the new executable on the right, both tinted.
    row = next(n for n, (i, j, tag) in enumerate(diff.rows()) if tag == "insert")
    assert left.row_tags[row] == "pad" and right.row_tags[row] == "insert"
    assert "flow.executable private @SingleConv$async_dispatch_0" in right.document().findBlockByNumber(row).text()
    assert "loc(" not in left.toPlainText() + right.toPlainText()
    left.verticalScrollBar().setValue(20)
    assert right.verticalScrollBar().value() == 20
    right.verticalScrollBar().setValue(5)
    assert left.verticalScrollBar().value() == 5
    assert "+  flow.executable private @SingleConv$async_dispatch_0 {" in view.unified_view.toPlainText()
    removed, added = diff.counts()
    assert view.summary.text() == f"{removed} lines removed, {added} added"

    patch = tmp_path / "flow.patch"
    view.save_patch(patch)
    copy = tmp_path / "05.mlir"
    copy.write_text(ws.snapshot_path("dispatch-creation").read_text())
    subprocess.run(["patch", "-s", str(copy), str(patch)], check=True)
    assert not diff_texts(copy.read_text(), ws.snapshot_path("flow").read_text()).changed


def test_pass_view_hides_unchanged_shows_a_diff_and_finds_the_first_flow_dispatch(qtbot, example_workspace,
                                                                                  tmp_path):
    import shutil

    from npu_studio.core.debug.pass_trace import PassTraceJob
    from npu_studio.core.workspace.workspace import Workspace
    from npu_studio.ui.edit.pass_view import PassView

    shutil.copytree(example_workspace.root, tmp_path / "ws")
    trace = PassTraceJob(Workspace.open(tmp_path / "ws"), "flow").run()
    view = PassView()
    qtbot.addWidget(view)
    view.set_trace(trace)
    assert len(view.visible_passes()) == len(trace.passes) == view.table.rowCount()
    view.hide_unchanged.setChecked(True)
    assert view.visible_passes() == [p.index for p in trace.passes if p.changed]
    found = view.find("flow.dispatch", mode=1)
    assert found is not None and found.name == "OutlineDispatchRegionsPass"
    assert view.selected_pass() == found
    assert "+  flow.executable private @SingleConv$async_dispatch_0 {" in view.diff_view.unified_view.toPlainText()
    assert view.find("#0", mode=2).index == found.index  # the first pass that changed dispatch 0
    assert view.find("util.func", mode=3).index == 0  # already in the first pass's output
    view.select_pass(found.index)
    view.show_ir.setChecked(True)
    assert "flow.dispatch @SingleConv$async_dispatch_0" in view.ir_text.toPlainText()


def test_replace_in_the_editor_is_one_undo_step_and_autosave_is_debounced(qtbot):
    from npu_studio.ui.edit.support import DraftAutosaver, ReplaceBar
    from npu_studio.ui.ir.ir_view import IrView

    view = IrView()
    qtbot.addWidget(view)
    view.set_text("%0 = arith.addf %a, %b\n%1 = arith.addf %0, %b\n", elide=False)
    view.set_editable(True)
    saved: list[str] = []
    autosaver = DraftAutosaver(view, saved.append, delay_ms=50)
    bar = ReplaceBar(view, lambda: "arith.addf", lambda: None)
    bar.field.setText("arith.subf")
    assert bar.replace_all() == 2
    assert view.text().count("arith.subf") == 2 and autosaver.pending()
    qtbot.waitUntil(lambda: bool(saved), timeout=2000)
    assert saved == [view.text()]  # one save for the burst of changes
    view.undo()
    assert view.text().count("arith.addf") == 2
    view.set_editable(False)
    assert bar.replace_all() == 0  # a read-only view is never changed

    # Steady typing never waits for a pause (10 s here, never reached): the 200 ms cap saves it.
    autosaver.enabled = False
    view.set_editable(True)
    steady = DraftAutosaver(view, saved.append, delay_ms=10_000, max_behind_ms=200)
    saved.clear()
    started = time.monotonic()
    while not saved and time.monotonic() - started < 3:
        view.insertPlainText("x")
        qtbot.wait(30)
    assert saved  # saved while the typing went on
    steady.cancel()
