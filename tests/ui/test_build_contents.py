"""The build says what it contains: the summary strip, the timeline's badges, the table's marks,
the check's reference and the target editor's marks, each against what the test itself did."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.npu.target import target_store  # noqa: E402
from npu_studio.core.workspace import substitutions as sub_records  # noqa: E402
from npu_studio.resources import TARGETS_DIR  # noqa: E402

from .test_failing_substitution import substitute_failing  # noqa: E402

WAIT = 180_000


def wait_npu(window, qtbot):
    qtbot.waitUntil(lambda: window.npu.state == "done" and not window.npu.is_running()
                    and "flow" in window.indexes, timeout=WAIT)


def strip_texts(window, qtbot):
    qtbot.wait(10)  # the strip redraws once per event-loop turn
    return window.build_summary.texts()


def test_the_summary_names_edits_and_the_target_keys_changed_from_the_bundled_one(window, qtbot, fresh_example):
    window.open_path(fresh_example.root)
    wait_npu(window, qtbot)
    build, target = strip_texts(window, qtbot)
    assert build == "Build: the compiler's output, nothing substituted"
    assert target == "NPU target default (bundled)"

    # two keys of the bundled target changed, by this test
    original = (TARGETS_DIR / "default.toml").read_text()
    edited = original.replace("size_kib = 2048", "size_kib = 1024").replace("lanes = 64", "lanes = 32")
    window.npu.edit_target()
    window.npu.editor.set_text(edited)
    with qtbot.waitSignal(window.npu.sig_finished, timeout=WAIT):
        window.npu.editor.apply()
    copy = target_store.user_targets_dir() / "default-edited.toml"
    assert window.session.target == copy
    assert window.session.build_summary().target.changes == (("sram.size_kib", 2048, 1024), ("vector.lanes", 64, 32))
    _, target = strip_texts(window, qtbot)
    assert target == "NPU target default-edited (user): 2 keys changed from bundled default: " \
                     "sram.size_kib 2,048 → 1,024, vector.lanes 64 → 32"

    # an edit recorded in flow and an uncompiled one in stream
    flow = fresh_example.snapshot_path("flow").read_text()
    window.session.record_edit("flow", flow.replace("arith.addf", "arith.subf", 1))
    window.session.set_draft("stream", fresh_example.snapshot_path("stream").read_text() + "\n")
    build, _ = strip_texts(window, qtbot)
    assert build == "Build: edited flow · uncompiled edits in stream"
    assert window.build_summary.isVisible() and window.build_summary.height() > 0


def test_a_rejected_target_is_marked_at_its_key_with_one_line_naming_file_and_key(window, qtbot, fresh_example):
    window.open_path(fresh_example.root)
    wait_npu(window, qtbot)
    editor = window.npu.editor
    window.npu.edit_target()
    bad = editor.text().replace("lanes = 64", "lanes = 0")
    line = bad.splitlines().index("lanes = 0") + 1  # where the test put the bad value
    editor.set_text(bad)
    editor.apply()
    assert editor.error_line() == line and editor.marked_text() == "lanes"
    message = editor.error_label.full_text()
    assert editor.error_label.isVisible() and "\n" not in message
    assert message.startswith(f"{TARGETS_DIR / 'default.toml'}:{line}:") and "vector.lanes" in message
    assert window.error_banner.isVisible()
    assert not (target_store.user_targets_dir() / "default-edited.toml").exists()  # nothing saved
    editor.edit.insertPlainText(" ")  # the user edits: the mark goes
    assert editor.error_line() is None and not editor.error_label.isVisible()


def test_a_substitution_is_named_badged_marked_and_named_in_the_checks_reference(window, qtbot, fresh_example):
    substitute_failing(window, qtbot, fresh_example)  # dispatch 0's executable, its check failed
    [record] = sub_records.load(window.workspace)
    build, _ = strip_texts(window, qtbot)
    assert build == f"Build: substituted @{record.name} (source, FAIL)"
    # from executable-sources on, the phases contain it; before, they do not
    timeline = window.timeline
    assert timeline.phase_badge("flow") is None and timeline.phase_badge("stream") is None
    for phase in ("executable-sources", "executable-configurations", "executable-targets", "hal", "vm"):
        text, tooltip, alert = timeline.phase_badge(phase)
        assert text == "⇄ 1" and alert and record.file in tooltip and "FAIL" in tooltip
    assert record.file in timeline.tooltip_text("hal")
    # the table marks dispatch 0 (the one substituted) and no other
    qtbot.waitUntil(lambda: "flow" in window.indexes, timeout=WAIT)  # the rebuild's reindex
    strip_texts(window, qtbot)
    window.show_phase("flow")
    table = window.dispatch_table
    marked = {table.item(r, 0).data(0x0100) for r in range(table.rowCount()) if "⇄" in table.item(r, 0).text()}
    assert marked == {0}
    tooltip, alert = table.mark(0)
    assert alert and f"@{record.name}" in tooltip and record.file in tooltip and "FAIL" in tooltip

    # Check numerics says its IREE reference contains it
    wait_npu(window, qtbot)
    dock = window.schedule
    qtbot.waitUntil(lambda: dock.check_action.isEnabled() and not dock.is_stale(), timeout=WAIT)  # simulated
    dock.check_action.trigger()
    qtbot.waitUntil(lambda: dock.check_label.full_text().endswith(("OK", "MISMATCH")) or
                    dock.check_label.full_text().startswith("Check failed"), timeout=WAIT)
    text = dock.check_label.full_text()
    assert f"the IREE reference contains substitutions: @{record.name} (source, {record.file}, FAIL)" in text, text
