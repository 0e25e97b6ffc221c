"""Compile-time profile: per-pass times by phase, and each executable's compile time."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from npu_studio.core.debug.compile_profile import (TIMING_FLAGS, ProfileJob, load_profile, phase_profile,
                                                   timing_report)
from npu_studio.core.debug.executable_times import OK, TIMEOUT, ExecutableTimesJob, load_times
from npu_studio.core.errors import CompileFailed
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.workspace.workspace import Workspace

from ..zoo_cache import zoo_workspace
from .test_hostile_inputs import tree


def _t(name, wall, children=(), user=None):
    return {"user": {"duration": wall if user is None else user}, "wall": {"duration": wall}, "name": name,
            "passes": [*children, {}]}


def test_dynamic_pipeline_counted_once_and_outside_time_kept_apart():
    # Hand-made report of the shape IREE prints: TranslateAllExecutablesPass (0.9 s) ran a pipeline whose
    # timer MLIR filed at the top (0.8 s: FooPass 0.5 + BarPass 0.3); the run's own total is 1.0 s.
    report = [
        _t("AssignTargetDevicesPass", 0.1),
        _t("'hal.executable' Pipeline", 0.9, [_t("TranslateAllExecutablesPass", 0.9)]),
        _t("'hal.executable.variant' Pipeline", 0.8, [_t("FooPass", 0.5), _t("BarPass", 0.3)]),
        {"user": {"duration": -0.8}, "wall": {"duration": -0.8}, "name": "Rest"},
        {"user": {"duration": 1.0}, "wall": {"duration": 1.0}, "name": "Total"},
    ]
    prof = phase_profile("executable-targets", report)
    walls = {p.name: p.wall for p in prof.passes}
    assert walls["FooPass"] == pytest.approx(0.5) and walls["BarPass"] == pytest.approx(0.3)
    assert walls["TranslateAllExecutablesPass"] == pytest.approx(0.1)  # 0.9 minus the 0.8 it ran
    assert walls["AssignTargetDevicesPass"] == pytest.approx(0.1)
    assert prof.pass_wall == pytest.approx(1.0) and prof.outside_wall == pytest.approx(0.0)
    assert prof.passes[0].name == "FooPass"
    # Without a dynamic pipeline, time in no pass (MLIR's positive Rest) stays outside the passes.
    plain = phase_profile("vm", [_t("'func.func' Pipeline", 0.7, [_t("APass", 0.4), _t("BPass", 0.2)]),
                                 {"wall": {"duration": 0.3}, "name": "Rest"}, {"wall": {"duration": 1.0}, "name": "Total"}])
    assert {p.name: p.wall for p in plain.passes} == pytest.approx(
        {"APass": 0.4, "BPass": 0.2, "'func.func' Pipeline": 0.1})
    assert plain.outside_wall == pytest.approx(0.3)


def test_report_is_found_after_diagnostics():
    text = ('warning: something\n[\n{"wall": {"duration":   0.0100, "percentage": 100.0}, "name": "APass", '
            '"passes": [\n{}]},\n{"wall": {"duration":   0.0000, "percentage":   0.0}, "name": "Rest"},\n'
            '{"wall": {"duration":   0.0100, "percentage": 100.0}, "name": "Total"}\n]\n')
    prof = phase_profile("vm", timing_report(text))
    assert [p.name for p in prof.passes] == ["APass"] and prof.total_wall == pytest.approx(0.01)


def _check_sums(prof):
    """Every phase: pass times add up to the compiler's own total of the phase run, within 10%.

    The part of a run outside any pass (the pass manager's set-up, 5 to 60 ms a
    run here) is allowed on top, so small phases are not judged on it alone.
    """
    for phase, pp in prof.phases.items():
        assert pp.pass_wall <= pp.total_wall * 1.10 + 1e-3, phase  # nothing counted twice
        assert pp.pass_wall >= pp.total_wall * 0.90 - 0.06, phase  # nothing lost
    return sum(pp.pass_wall >= 0.9 * pp.total_wall for pp in prof.phases.values())


def test_example_profile_sums_to_the_compilers_phase_totals(fresh_example):
    before = {k: v for k, v in tree(fresh_example.root).items()}
    prof = ProfileJob(fresh_example).run()
    assert list(prof.phases) == list(fresh_example.snapshots())
    assert _check_sums(prof) >= 6
    # Kept in the workspace (nothing else changed) until the build changes.
    after = tree(fresh_example.root)
    assert {k: v for k, v in after.items() if k != "profiles/main.json"} == before
    again = load_profile(Workspace.open(fresh_example.root))
    assert again is not None and again.phases["hal"].passes[0].name == prof.phases["hal"].passes[0].name
    fresh_example.compile()
    assert load_profile(fresh_example) is None


@pytest.fixture(scope="module")
def resnet50(tmp_path_factory):
    dest = tmp_path_factory.mktemp("profile") / "ws"
    shutil.copytree(zoo_workspace("resnet50").root, dest)
    return Workspace.open(dest)


def _list_timing(cmd):
    """A separate compile with MLIR's own text list of pass times: {pass name: wall seconds}."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    times = {}
    for m in re.finditer(r"^\s+(-?\d+\.\d+) \(\s*-?[\d.]+%\)\s+(?:-?\d+\.\d+ \(\s*-?[\d.]+%\)\s+)?(\S.*)$",
                         out.stderr, re.M):
        times[m.group(2).strip()] = float(m.group(1))  # with user time, the second column is wall
    return times


def test_resnet50_profile_and_its_top_executable_targets_pass(resnet50, tmp_path):
    prof = ProfileJob(resnet50).run()
    assert _check_sums(prof) >= 8
    pp = prof.phases["executable-targets"]
    top = pp.passes[0]
    assert top.wall > 0 and pp.share(top) > 0.05
    # A separate run of the same phase, timed by MLIR itself as a list of passes.
    cmd = [a for a in pp.command if a not in TIMING_FLAGS and not a.startswith("--dump-compilation-phases-to=")]
    cmd[cmd.index("-o") + 1] = str(tmp_path / "out.mlir")
    cmd.append(f"--dump-compilation-phases-to={tmp_path / 'dumps'}")
    cmd += ["--mlir-disable-threading", "--mlir-timing", "--mlir-timing-display=list"]
    listed = _list_timing(cmd)
    assert top.name in listed
    # The list gives each pass with what it ran inside it; our time is its own share of that.
    assert 0.1 * listed[top.name] <= top.wall <= 1.5 * listed[top.name] + 0.05
    # A pass that runs nothing inside it has the same time in both (two runs on a busy machine: within 2x).
    leaf = next(p for p in pp.passes if p.name in listed and p.instances == 1 and p.wall > 0.05
                and "Pipeline" not in p.name and "Adaptor" not in p.name and "Lower" not in p.name)
    assert 0.5 * listed[leaf.name] <= leaf.wall <= 2.0 * listed[leaf.name] + 0.02


def test_executable_timeout_is_reported_with_its_dispatch_and_others_get_times(resnet50):
    infos = list_executables(resnet50)
    slow = infos[len(infos) // 2]
    job = ExecutableTimesJob(resnet50, timeout=300, jobs=2, timeouts={slow.name: 0.001})
    result = job.run()
    by_name = result.by_name()
    assert set(by_name) == {i.name for i in infos}
    assert by_name[slow.name].status == TIMEOUT
    assert by_name[slow.name].dispatches == [f"#{d}" for d in slow.dispatches] != []
    assert result.times[0].name == slow.name  # reported first, with the slowest
    others = [t for t in result.times if t.name != slow.name]
    assert all(t.status == OK and t.seconds > 0 and t.object_bytes > 0 for t in others)
    assert [t.seconds for t in others] == sorted((t.seconds for t in others), reverse=True)
    assert load_times(resnet50).by_name()[slow.name].status == TIMEOUT


def test_failed_profile_leaves_the_workspace_unchanged(fresh_example):
    snap = fresh_example.snapshot_path("flow")
    snap.write_text(snap.read_text() + "\n this is not MLIR\n")
    before = tree(fresh_example.root)
    with pytest.raises(CompileFailed):
        ProfileJob(fresh_example, phases=["stream"]).run()
    assert tree(fresh_example.root) == before


def test_cli_profile_json_and_bad_input(fresh_example):
    from .test_cli import cli

    proc = cli("profile", fresh_example.root, "--phase", "hal", "--top", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["phases"]["hal"]["passes"]) == 3
    before = tree(fresh_example.root)
    for args in (["--top", "0"], ["--build", "nope"], ["--executables", "--timeout", "0"]):
        bad = cli("profile", fresh_example.root, *args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert tree(fresh_example.root) == before


def test_tracy_capture_of_a_run_is_kept_and_missing_capabilities_are_one_line(fresh_example):
    from npu_studio.core.debug.tracy_capture import (capture_run, missing_compiler_tracing,
                                                     missing_runtime_capture)
    from npu_studio.core.run.runner import pick_function, random_inputs

    assert missing_runtime_capture() is None  # the runtime wheel here ships the Tracy runtime and capture tool
    before = tree(fresh_example.root)
    sig = pick_function(fresh_example.snapshot_path("input"))
    cap = capture_run(fresh_example, "main", sig.name, random_inputs(sig))
    assert cap.path == fresh_example.root / "profiles" / "main.tracy"
    assert cap.path.read_bytes()[:4] == b"tr\xfdP"  # Tracy's own file header
    assert cap.zones and cap.zones > 0
    assert set(tree(fresh_example.root)) - set(before) == {"profiles/main.tracy"}
    # The compiler wheel carries no Tracy client: said in one line, not offered.
    reason = missing_compiler_tracing()
    assert reason is not None and "\n" not in reason and "source build" in reason


def test_cancelled_profile_leaves_the_workspace_unchanged(fresh_example):
    from npu_studio.core.errors import Cancelled

    before = tree(fresh_example.root)
    job = ProfileJob(fresh_example, on_progress=lambda done, running: done == "abi" and job.cancel())
    with pytest.raises(Cancelled):
        job.run()
    assert tree(fresh_example.root) == before


def test_cli_executables_timeout_is_one_line_naming_the_dispatch(fresh_example):
    from .test_cli import cli

    proc = cli("profile", fresh_example.root, "--executables", "--timeout", "0.001")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if " timeout " in ln]
    assert len(lines) == 1 and "#0" in lines[0] and "no result within 0.001 s" in lines[0]


def test_profile_of_a_build_rebuilt_meanwhile_is_not_published(fresh_example):
    from npu_studio.core.errors import WorkspaceError
    from npu_studio.core.workspace import variants

    variants.create(fresh_example, "v")
    variants.build(fresh_example, "v")
    other = Workspace.open(fresh_example.root)
    rebuilt = []

    def rebuild_once(done, running):
        if done == "abi" and not rebuilt:  # the profile runs unlocked: a rebuild may happen meanwhile
            rebuilt.append(variants.build(other, "v"))

    job = ProfileJob(fresh_example, "v", phases=["abi", "preprocessing"], on_progress=rebuild_once)
    with pytest.raises(WorkspaceError, match="changed while it was measured"):
        job.run()
    assert rebuilt and not (fresh_example.root / "profiles" / "v.json").exists()
