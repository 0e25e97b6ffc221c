"""Honest phase state: edited means different from the compiler's output; unchanged resumes compile nothing."""

from __future__ import annotations

import hashlib

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.debug.phase_diff import workspace_diff
from npu_studio.core.workspace import edit_state
from npu_studio.core.workspace.workspace import Workspace

BIAS_ADD = "%6 = arith.addf %in, %in_1 : f32"


def test_resuming_an_unchanged_phase_compiles_nothing(fresh_example, monkeypatch):
    ws = fresh_example
    text = ws.snapshot_path("flow").read_text()
    mtimes = {p: ws.snapshot_path(p).stat().st_mtime_ns for p in SNAPSHOT_PHASES}
    plan = edit_state.resume_plan(ws, "flow", text)
    assert not plan.needed and "nothing recompiled" in plan.reason
    monkeypatch.setattr(Workspace, "resume_job", lambda *a, **k: (_ for _ in ()).throw(AssertionError("compiled")))
    assert edit_state.resume(ws, "flow", text) is None
    assert {p: ws.snapshot_path(p).stat().st_mtime_ns for p in SNAPSHOT_PHASES} == mtimes
    assert ws.manifest.edits == [] and not (ws.root / "originals").exists()
    assert edit_state.phase_states(ws) == {p: "done" for p in SNAPSHOT_PHASES}


def test_an_edit_typed_back_to_the_original_is_no_edit(fresh_example):
    ws = fresh_example
    original = ws.snapshot_path("flow").read_text()
    edit_state.record_edit(ws, "flow", original.replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf")))
    assert edit_state.phase_states(ws)["flow"] == "edited"
    assert edit_state.phase_states(ws)["stream"] == "stale"
    d = workspace_diff(ws, "flow", original=True)
    assert d.counts() == (1, 1)
    edit_state.record_edit(ws, "flow", original)
    assert ws.snapshot_path("flow").read_text() == original
    assert edit_state.phase_states(ws)["flow"] == "done"


def test_autosaved_draft_of_unchanged_text_is_dropped(fresh_example):
    ws = fresh_example
    text = ws.snapshot_path("flow").read_text()
    assert edit_state.autosave_draft(ws, "flow", text + "\n// note\n")
    assert ws.drafts()["flow"].endswith("// note\n")
    assert edit_state.phase_states(ws)["flow"] == "edited"
    assert not edit_state.autosave_draft(ws, "flow", text)
    assert ws.drafts() == {}


def test_resume_keeps_the_previous_build_and_revert_restores(fresh_example):
    # (The output's -2 x bias shift is checked in tests/ui/test_edit_resume.py, through the window.)
    ws = fresh_example
    original = ws.snapshot_path("flow").read_text()
    assert original.count(BIAS_ADD) == 1
    result = edit_state.resume(ws, "flow", original.replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf")))
    assert result is not None and [t.phase for t in result.phases] == list(SNAPSHOT_PHASES[6:])
    states = edit_state.phase_states(ws)
    assert states["flow"] == "edited" and all(states[p] == "done" for p in SNAPSHOT_PHASES[6:])
    # The same phase in the two builds: stream before and after the resume.
    assert workspace_diff(ws, "stream", previous_build=True).changed
    assert edit_state.revert(ws, "flow")
    assert ws.snapshot_path("flow").read_text() == original
    states = edit_state.phase_states(ws)
    assert states["flow"] == "done" and all(states[p] == "stale" for p in SNAPSHOT_PHASES[6:])


def test_a_snapshot_edited_in_place_and_resumed_keeps_the_compilers_original(fresh_example):
    ws = fresh_example
    snap = ws.snapshot_path("flow")
    original = snap.read_text()
    edited = original.replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf"))
    assert edited != original
    snap.write_text(edited)  # what a user's text editor does with the file the CLI points at
    edit_state.resume(ws, "flow", snap.read_text())  # what `npu-studio resume SNAPSHOT` does
    assert edit_state.compiler_text_path(ws, "flow").read_text() == original
    assert edit_state.is_edited(ws, "flow")


def test_a_snapshot_edited_in_place_keeps_the_compilers_text_as_iree_writes_it_again(fresh_example, tmp_path):
    # The truth: iree-compile itself, run here on the workspace's import up to flow.
    from npu_studio.core.compile.compiler import CompileJob

    ws = fresh_example
    again = CompileJob(ws.imported_path, tmp_path / "again",
                       ws.compile_options(from_phase="start", to_phase="flow")).run().phases[-1].path
    snap = ws.snapshot_path("flow")
    edited = snap.read_text().replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf"))
    snap.write_text(edited)
    result = edit_state.resume(ws, "flow", snap.read_text())
    assert edit_state.original_path(ws, "flow").read_bytes() == again.read_bytes()
    assert "notes" not in result.extra
    assert snap.read_text() == edited  # the user's edit stays the snapshot and is recorded as the edit
    assert [e["phase"] for e in ws.manifest.edits] == ["flow"]
    assert (ws.root / ws.manifest.edits[0]["file"]).read_text() == edited
    assert edit_state.phase_states(ws)["flow"] == "edited"


def test_when_iree_does_not_give_the_recorded_text_back_no_original_is_kept(fresh_example):
    ws = fresh_example
    snap = ws.snapshot_path("flow")
    original = snap.read_text()
    # A record the compile cannot reproduce (as after another iree-compile): the hash of other text.
    ws.manifest.phases["flow"].sha256 = hashlib.sha256(b"not what iree-compile writes").hexdigest()
    ws.save()
    snap.write_text(original.replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf")))
    result = edit_state.resume(ws, "flow", snap.read_text())
    assert result is not None and not edit_state.original_path(ws, "flow").exists()
    [note] = result.extra["notes"]
    assert "06.flow.mlir was edited in place" in note and "no compiler's original kept" in note
    assert "from start: a different text" in note and "from dispatch-creation: a different text" in note
    assert ws.manifest.edits and ws.manifest.edits[-1]["phase"] == "flow"


def test_a_workspace_without_hashes_never_takes_an_in_place_edit_for_the_compilers(fresh_example):
    ws = fresh_example
    for rec in ws.manifest.phases.values():
        rec.sha256 = rec.compiled_from = ""  # as a workspace made before they were recorded
    ws.save()
    snap = ws.snapshot_path("flow")
    snap.write_text(snap.read_text().replace(BIAS_ADD, BIAS_ADD.replace("addf", "subf")))
    result = edit_state.resume(ws, "flow", snap.read_text())
    assert not edit_state.original_path(ws, "flow").exists()
    assert "recorded no hash" in result.extra["notes"][0]
