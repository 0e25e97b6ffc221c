"""The session's policies, without Qt: stale propagation, failures, targets, selection, outdated jobs."""

from __future__ import annotations

import pytest

from npu_studio.core.compile.phases import SNAPSHOT_PHASES, phases_after
from npu_studio.core.ir.dispatch_index import index_workspace_phases
from npu_studio.core.npu.target import target_store
from npu_studio.core.npu.store import workspace_io
from npu_studio.core.npu.target.target import RESOURCES, TargetError
from npu_studio.core.session import NPU_PHASE, NpuResult, Session
from npu_studio.core.workspace.workspace import Workspace


class Recorder:
    """Counts the events a session announces."""

    def __init__(self, session: Session):
        self.seen: list[str] = []
        for name in ("workspace", "phases", "indexes", "npu", "target", "selection"):
            getattr(session.events, name).connect(lambda name=name: self.seen.append(name))


def npu_result(ws: Workspace, target=None) -> NpuResult:
    program = workspace_io.run_for_workspace(ws, target)
    return NpuResult(program, workspace_io.mlir_path(ws).read_text(), 0.0, target or RESOURCES / "default.toml")


@pytest.fixture(scope="module")
def example_indexes(example_workspace):
    return index_workspace_phases(example_workspace.snapshots())


def opened(ws: Workspace) -> Session:
    s = Session()
    s.open_workspace(Workspace.open(ws.root))
    return s


def test_an_edit_makes_the_later_phases_and_the_npu_stale(fresh_example):
    s = opened(fresh_example)
    gen = s.begin("npu")
    s.npu_started(gen)
    assert s.npu_finished(npu_result(fresh_example), gen)
    assert s.set_indexes(index_workspace_phases(fresh_example.snapshots()), {}, s.begin("index"))
    assert set(s.phase_states().values()) == {"done"} and s.phases_to_index() == {}
    events = Recorder(s)

    # A draft: only its phase is edited, and the npu (built from flow) is stale while flow has one.
    text = fresh_example.snapshot_path("flow").read_text()
    s.set_draft("flow", text + "\n// note\n")
    assert s.phase_state("flow") == "edited" and s.phase_state("stream") == "done"
    assert s.npu_state() == "stale"
    s.drop_draft("flow")
    assert s.npu_state() == "done"

    # A recorded edit of stream: stream edited, everything after it stale, flow and npu untouched.
    s.record_edit("stream", fresh_example.snapshot_path("stream").read_text() + "// edited\n")
    for phase in SNAPSHOT_PHASES:
        expected = "edited" if phase == "stream" else "stale" if phase in phases_after("stream") else "done"
        assert s.phase_state(phase) == expected, phase
    assert s.npu_state() == "done"
    assert list(s.phases_to_index()) == ["stream"]  # only the replaced snapshot is reindexed

    # An edit of flow itself: the npu result was built from the text it replaced.
    s.record_edit("flow", fresh_example.snapshot_path("flow").read_text() + "// edited\n")
    assert s.phase_state("flow") == "edited" and s.npu_state() == "stale"
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example), gen)
    assert s.npu_state() == "done"

    # An edit before flow: flow goes stale and the npu follows it.
    # (A changed text: recording the compiler's own output is no edit, issue 14.)
    s.record_edit("global-optimization",
                  fresh_example.snapshot_path("global-optimization").read_text() + "// edited\n")
    assert s.phase_state("flow") == "stale" and s.npu_state() == "stale"
    assert events.seen.count("phases") == 5
    # The workspace on disk says the same: reopening shows the stale phases.
    assert opened(fresh_example).phase_state("flow") == "stale"


def test_a_failed_compile_fails_its_phases_and_the_npu_with_flow(fresh_example):
    s = opened(fresh_example)
    gen = s.begin("compile")
    s.compile_started("dispatch-creation", gen)
    # A resume: the phases it rebuilds are stale at once until each is rebuilt (issue 14).
    assert s.phase_state("flow") == "stale" and s.phase_state("dispatch-creation") == "done"
    s.compile_progress(None, "flow", gen)
    assert s.phase_state("flow") == "running"
    s.compile_progress("flow", "stream", gen)
    assert s.phase_state("flow") == "done" and s.phase_state("stream") == "running"
    assert s.compile_failed(gen, cancelled=False)
    for phase in phases_after("dispatch-creation"):
        assert s.phase_state(phase) == "failed", phase
    assert s.phase_state("dispatch-creation") == "done"
    assert s.npu_state() == "failed" and not s.can_run_npu()
    # The next compile starts clean.
    gen = s.begin("compile")
    s.compile_started("start", gen)
    assert s.phase_state("flow") == "pending"


def test_a_cancelled_compile_keeps_the_finished_phases(fresh_example):
    s = opened(fresh_example)
    gen = s.begin("compile")
    s.compile_started("start", gen)
    s.compile_progress("input", "abi", gen)
    # The worker kept the finished snapshot in its own copy of the workspace.
    worker_ws = Workspace.open(fresh_example.root)
    assert s.compile_failed(gen, cancelled=True, ws=worker_ws)
    assert s.workspace is worker_ws
    assert s.phase_state("input") == "done" and s.phase_state("vm") == "done"  # earlier results untouched
    assert "input" in s.phases_to_index()


def test_changing_the_target_makes_the_npu_stale_until_it_runs_again(fresh_example):
    s = opened(fresh_example)
    assert s.target == RESOURCES / "default.toml" and s.target_label() == "target default (bundled)"
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example), gen)
    assert s.target_label() == "built with default (bundled)"
    events = Recorder(s)
    s.set_target(RESOURCES / "tiny.toml")
    assert s.npu_state() == "stale" and events.seen == ["target", "npu"]
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example, s.target), gen)
    assert s.npu_state() == "done" and s.target_label() == "built with tiny (bundled)"
    assert not s.npu.program.dispatches[0].legal


def test_an_edited_recorded_target_is_named_with_its_changes_everywhere(fresh_example):
    # The workspace's copy of the target, edited after it was recorded (rows 32 -> 8 by hand): the summary,
    # the picker and the phase label all name the copy, and the summary lists the changed key.
    from npu_studio.core.build_summary import summarize_target
    from npu_studio.core.npu.store import workspace_io

    s = opened(fresh_example)
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example), gen)
    copy = workspace_io.recorded_target(fresh_example).path
    text = copy.read_text()
    assert "rows = 32" in text
    copy.write_text(text.replace("rows = 32", "rows = 8", 1))
    s.set_target(copy)
    summary = summarize_target(copy, fresh_example)
    assert summary.label == "default (recorded in this workspace)" and not summary.bundled
    assert [(k, a, b) for k, a, b in summary.changes] == [("mac_array.rows", 32, 8)]
    assert summary.text().startswith("NPU target default (recorded in this workspace): 1 key changed from "
                                     "bundled default: mac_array.rows 32 → 8")
    assert s.build_summary().target.label == summary.label and summary.label in s.target_label()

    # A rejected edit: nothing saved, the result stays but goes stale.
    bad = (RESOURCES / "tiny.toml").read_text().replace("rows = 8", "rows = -8")
    with pytest.raises(TargetError):
        s.save_target_edit(bad, RESOURCES / "tiny.toml")
    assert s.npu_state() == "stale" and target_store.user_targets() == []
    # A good edit of a bundled target: a named user target, used by this model from now on.
    dest = s.save_target_edit((RESOURCES / "default.toml").read_text(), RESOURCES / "default.toml")
    assert dest == target_store.user_targets_dir() / "default-edited.toml" and s.target == dest
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example, s.target), gen)

    # Reopening the workspace brings back the target it was built with, whatever the app now uses.
    again = Session(target=RESOURCES / "tiny.toml")
    again.open_workspace(Workspace.open(fresh_example.root))
    assert again.target == fresh_example.root / "npu" / "target.toml"
    assert again.target.read_text() == dest.read_text()
    assert workspace_io.recorded_target(again.workspace).origin == dest


def test_the_selected_dispatch_follows_across_phases(example_workspace, example_indexes):
    s = opened(example_workspace)
    gen = s.begin("index")
    assert s.set_indexes(example_indexes, {}, gen)
    events = Recorder(s)
    s.select_phase("flow")
    s.select_dispatch(0)
    flow_rec = s.selected_record()
    assert flow_rec is example_indexes["flow"].dispatches[0] and flow_rec.root.kind == "conv"
    s.select_phase("executable-targets")
    rec = s.selected_record()
    assert rec is example_indexes["executable-targets"].dispatches[0]
    assert rec.executable == flow_rec.executable and rec.onnx_nodes == ["Conv_0"]
    s.select_phase("vm")  # no dispatches here: nothing shown, the selection kept
    assert s.selected_record() is None and s.selection.dispatch == 0
    s.select_phase(NPU_PHASE)  # the npu phase shows flow's records
    assert s.selected_record() is flow_rec
    assert events.seen == ["selection"] * 5
    with pytest.raises(ValueError):
        s.select_phase("nope")


def test_selecting_a_task_selects_its_dispatch(fresh_example):
    s = opened(fresh_example)
    gen = s.begin("npu")
    s.npu_finished(npu_result(fresh_example), gen)
    task = s.npu.program.tasks_of(0)[3]
    s.select_task(task.id)
    assert (s.selection.dispatch, s.selection.task) == (0, task.id)
    s.select_dispatch(None)
    assert s.selection.task is None


def test_outdated_job_results_are_dropped(example_workspace, example_indexes, fresh_example):
    s = opened(example_workspace)
    first, second = s.begin("index"), s.begin("index")
    assert not s.set_indexes({"flow": example_indexes["flow"]}, {}, first)
    assert s.indexes == {}
    assert s.set_indexes(example_indexes, {}, second) and s.indexes["flow"] is example_indexes["flow"]

    # A job started for one model delivers after another was opened: dropped.
    npu_gen, compile_gen = s.begin("npu"), s.begin("compile")
    s.compile_started("start", compile_gen)
    other = Workspace.open(fresh_example.root)
    events = Recorder(s)
    s.open_workspace(other)
    assert events.seen == ["workspace", "target"] and s.indexes == {} and s.npu is None
    assert not s.npu_finished(npu_result(fresh_example), npu_gen)
    assert not s.compile_finished(Workspace.open(example_workspace.root), compile_gen)
    assert s.workspace is other and s.npu is None and not s.is_compiling()
    assert events.seen == ["workspace", "target"]  # nothing from the outdated jobs


def test_clearing_for_a_new_model_forgets_the_old_one(example_workspace, example_indexes):
    s = opened(example_workspace)
    s.set_indexes(example_indexes, {}, s.begin("index"))
    s.select_phase("flow")
    s.select_dispatch(0)
    s.clear(opening=example_workspace.root / "other.onnx")
    assert s.workspace is None and s.indexes == {} and s.selection.phase is None
    assert s.model_name == "other.onnx" and set(s.phase_states().values()) == {"pending"}


def test_a_blank_schedule_says_why(example_workspace):
    from npu_studio.core.session import Session

    s = Session()
    assert s.npu_blank_reason().startswith("No model open")
    s.clear(opening=example_workspace.root / "m.onnx")
    assert s.npu_blank_reason().startswith("Importing")
    s.open_workspace(example_workspace)
    assert s.npu_blank_reason().startswith("Not simulated yet")  # flow is compiled: the NPU program comes next
    s.set_draft("flow", "// typed, not compiled\n")
    assert "flow has an edit that is not compiled" in s.npu_blank_reason()
    s.drop_draft("flow")
    gen = s.begin("npu")
    s.npu_failed(gen)
    assert "failed to build" in s.npu_blank_reason()


def test_an_npu_run_under_way_is_stale_once_flow_is_being_rebuilt(example_workspace):
    from npu_studio.core.session import RUNNING, STALE, Session

    s = Session()
    s.open_workspace(example_workspace)
    s.npu_started(s.begin("npu"))
    assert s.npu_state() == RUNNING
    s.compile_started("dispatch-creation", s.begin("compile"))  # a resume before flow: flow goes stale
    assert s.phase_state("flow") == STALE and s.npu_state() == STALE
