"""What the IR pane shows for a phase, decided by the session without Qt (core/phase_view.py)."""

from __future__ import annotations

import pytest

from npu_studio.core.errors import StudioError
from npu_studio.core.phase_view import DRAFT_STATE, FAILED_STATE
from npu_studio.core.session import NPU_PHASE

from .test_session import opened


def test_a_compiled_phase_shows_its_snapshot_with_its_file_and_state(example_workspace):
    s = opened(example_workspace)
    shown = s.phase_view("flow")
    path = example_workspace.snapshot_path("flow")
    assert shown.text == path.read_text(encoding="utf-8")
    assert shown.path == path and not shown.is_draft
    assert shown.label == f"<b>flow</b> — {path.relative_to(example_workspace.root)} (done)"


def test_a_draft_shows_in_place_of_the_snapshot_and_says_so(fresh_example):
    s = opened(fresh_example)
    s.set_draft("flow", "// typed, not compiled\n")
    shown = s.phase_view("flow")
    assert shown.text == "// typed, not compiled\n" and shown.is_draft
    assert shown.label.endswith(f"({DRAFT_STATE})")


def test_a_failed_phase_says_its_text_is_the_previous_build(fresh_example):
    s = opened(fresh_example)
    gen = s.begin("compile")
    s.compile_started("start", gen)
    assert s.compile_failed(gen, cancelled=False)
    shown = s.phase_view("flow")
    assert shown.text == fresh_example.snapshot_path("flow").read_text(encoding="utf-8")
    assert shown.label.endswith(f"({FAILED_STATE})")


def test_an_unreadable_snapshot_is_one_error_naming_it(fresh_example):
    s = opened(fresh_example)
    path = fresh_example.snapshot_path("flow")
    path.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(StudioError) as exc:
        s.phase_view("flow")
    assert str(path) in str(exc.value)


def test_the_npu_phase_without_a_result_says_why(example_workspace):
    s = opened(example_workspace)
    shown = s.phase_view(NPU_PHASE)
    assert shown.text == f"// NPU pipeline: {s.npu_state()}\n" and not shown.is_draft
    assert shown.label.startswith(f"<b>{NPU_PHASE}</b> — {s.npu_state()} (")


def test_editor_text_equal_to_the_snapshot_is_no_draft(fresh_example):
    s = opened(fresh_example)
    snapshot = fresh_example.snapshot_path("stream").read_text(encoding="utf-8")
    s.stash_edit("stream", snapshot)
    assert "stream" not in s.drafts
    s.stash_edit("stream", snapshot + "// a comment\n")
    assert s.drafts["stream"] == snapshot + "// a comment\n"
    assert s.phase_state("stream") == "edited"
