"""Banners bound to their condition (core/problems.py and the session's rules), without Qt."""

from __future__ import annotations

from npu_studio.core.problems import COMPILE, NPU, OPEN, Problems
from npu_studio.core.session import FAILED, Session


def test_the_newest_raised_problem_shows_and_ending_a_condition_removes_only_it():
    changes = []
    p = Problems(lambda: changes.append(1))
    assert p.newest() is None
    p.raise_(OPEN, "a.onnx: not an ONNX model")
    p.raise_(COMPILE, "flow.mlir:3:1: error")
    assert p.newest() == "flow.mlir:3:1: error"
    p.raise_(OPEN, "b.onnx: truncated")  # raised again: newest again
    assert p.newest() == "b.onnx: truncated" and p.conditions() == [COMPILE, OPEN]
    p.clear(OPEN)
    assert p.newest() == "flow.mlir:3:1: error"
    p.clear(NPU)  # not raised: nothing changes, nobody is told
    n = len(changes)
    p.clear(NPU)
    assert len(changes) == n
    p.clear()
    assert p.newest() is None


def failed_resume(s: Session, phase: str) -> None:
    gen = s.begin("compile")
    s.compile_started(phase, gen)
    s.set_draft(phase, "// my broken edit\n")
    s.problems.raise_(COMPILE, f"{phase}: error")
    assert s.compile_failed(gen, cancelled=False)


def test_a_failed_resume_ends_with_undo_back_to_the_compiled_text(fresh_example):
    s = Session()
    s.open_workspace(fresh_example)
    failed_resume(s, "flow")
    assert s.phase_state("stream") == FAILED and s.problems.is_raised(COMPILE)
    s.drop_draft("flow")  # undone back to the compiled text: the autosave drops the draft
    assert s.phase_state("stream") != FAILED and not s.problems.is_raised(COMPILE)
    assert s.problems.newest() is None


def test_a_failed_resume_ends_with_a_revert_and_a_later_phase_revert_does_not_end_it(fresh_example):
    s = Session()
    s.open_workspace(fresh_example)
    failed_resume(s, "flow")
    s.snapshot_replaced("hal")  # a later phase reverted: the failure from flow still holds
    assert s.problems.is_raised(COMPILE) and s.phase_state("stream") == FAILED
    s.drafts.pop("flow")
    s.snapshot_replaced("flow")  # Revert to Compiler Output on flow
    assert not s.problems.is_raised(COMPILE) and s.phase_state("stream") != FAILED


def test_another_model_ends_the_old_ones_problems_but_a_failed_open_stays(fresh_example):
    s = Session()
    s.open_workspace(fresh_example)
    s.problems.raise_(NPU, "NPU pipeline failed")
    s.problems.raise_(OPEN, "x.onnx: truncated")
    s.open_workspace(fresh_example)  # back to the model that was open
    assert s.problems.conditions() == [OPEN]


def test_a_failing_substitution_is_undecided_until_kept_and_a_new_verdict_asks_again():
    from npu_studio.core.workspace.substitutions import Substitution

    failing = {"passed": False, "max_abs": 0.5, "bit_identical": False}
    sub = Substitution("exe", "source", file="substitutions/exe.source.1.mlir", verdict=dict(failing))
    assert sub.undecided
    sub.kept_failing = dict(failing)
    assert not sub.undecided
    sub.verdict = {**failing, "max_abs": 0.7}  # checked again: another failing verdict
    assert sub.undecided
    sub.enabled = False  # switched off: nothing to decide
    assert not sub.undecided
    passing = Substitution("exe", "source", file="f.mlir", verdict={"passed": True, "max_abs": 0.0})
    assert not passing.undecided


def test_unreadable_files_gather_in_one_banner_and_end_with_the_model(tmp_path):
    from npu_studio.core.problems import UNREADABLE
    from npu_studio.core.workspace.workspace import Workspace

    p = Problems()
    p.raise_(UNREADABLE, "ws/profiles/main.json: is a folder, not a file")
    p.raise_(UNREADABLE, "ws/npu/target.toml: not UTF-8 text")
    p.raise_(UNREADABLE, "ws/profiles/main.json: is a folder, not a file")  # a view read it again
    assert p.newest() == "ws/profiles/main.json: is a folder, not a file\nws/npu/target.toml: not UTF-8 text"
    # A draft that cannot be read is named, kept on disk byte for byte, and the others still come back.
    ws = Workspace.__new__(Workspace)
    ws.root = tmp_path
    ws.save_draft("flow", "// mine\n")
    bad = ws.draft_path("stream")
    bad.write_bytes(b"\xff\xfe mine too")
    found: list[str] = []
    assert ws.drafts(found) == {"flow": "// mine\n"}
    assert len(found) == 1 and str(bad) in found[0] and "not UTF-8" in found[0]
    assert bad.read_bytes() == b"\xff\xfe mine too"
