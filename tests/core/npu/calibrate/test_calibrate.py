"""Measured against simulated, and calibration: measurements made by simulating on a hidden target
are fitted from the default target; the fitted keys must come back within 5% of the hidden values."""

from __future__ import annotations

import shutil
import tomllib

import pytest

from npu_studio.cli import main
from npu_studio.core.errors import BadFile
from npu_studio.core.npu.calibrate.fit import with_values
from npu_studio.core.npu.calibrate.measured import MeasuredError, read_measured, task_csv_text
from npu_studio.core.npu.backend import registry
from npu_studio.core.npu.calibrate.target_text import set_keys
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.store.workspace_io import json_path, run_for_workspace
from npu_studio.core.npu.target.target import RESOURCES, load_target, parse_target
from npu_studio.core.npu.target.target_store import user_targets_dir
from npu_studio.core.workspace.workspace import Workspace

HIDDEN = {"dram.bytes_per_cycle": 40, "dma.setup_cycles": 100, "mac_array.macs_per_cycle.f32": 2}


def _workspace(source, tmp_path, name="ws"):
    shutil.copytree(source.root, tmp_path / name)
    ws = Workspace.open(tmp_path / name)
    return ws, run_for_workspace(ws)


def _calibrate_and_check(ws, program, measured_file, capsys, tmp_path):
    out = tmp_path / "fitted.toml"
    assert main(["calibrate", str(ws.root), "--measured", str(measured_file), "--out", str(out),
                 "--keys", ",".join(HIDDEN)]) == 0
    report = capsys.readouterr().out
    fitted = tomllib.loads(out.read_text())
    got = {"dram.bytes_per_cycle": fitted["dram"]["bytes_per_cycle"], "dma.setup_cycles": fitted["dma"]["setup_cycles"],
           "mac_array.macs_per_cycle.f32": fitted["mac_array"]["macs_per_cycle"]["f32"]}
    for key, hidden in HIDDEN.items():
        assert abs(got[key] - hidden) <= 0.05 * hidden, (key, got[key], report)
    # the per-dispatch error after the fit, recomputed here from the written file
    truth = simulate(program, with_values(program.target, HIDDEN))
    again = simulate(program, load_target(out))
    for d_true, d_fit in zip(truth.dispatches, again.dispatches):
        assert abs(d_fit.cycles - d_true.cycles) <= 0.02 * d_true.cycles
    assert "per-dispatch error after" in report and "worst dispatches" in report
    return report


def test_fit_example_per_task(example_workspace, tmp_path, capsys):
    """One dispatch: per-task measurements (120 tasks) tell bandwidth, setup and MAC rate apart."""
    ws, program = _workspace(example_workspace, tmp_path)
    assert program.target.dram_bytes_per_cycle == 64 and program.target.mac_rate("f32") == 1  # the default
    measured = tmp_path / "tasks.csv"
    measured.write_text(task_csv_text(simulate(program, with_values(program.target, HIDDEN))))
    _calibrate_and_check(ws, program, measured, capsys, tmp_path)


@pytest.mark.slow
def test_fit_resnet50_from_simulate_csv(tmp_path, capsys):
    """The per-dispatch CSV `simulate --csv` writes, taken as it is, on light resnet50 (58 dispatches)."""
    from tests.zoo_cache import zoo_workspace

    ws, program = _workspace(zoo_workspace("resnet50"), tmp_path)
    hidden_target = tmp_path / "hidden.toml"
    hidden_target.write_text(set_keys((RESOURCES / "default.toml").read_text(), HIDDEN))
    measured = tmp_path / "measured.csv"
    assert main(["simulate", str(json_path(ws)), "--target", str(hidden_target), "--csv", str(measured)]) == 0
    capsys.readouterr()
    _calibrate_and_check(ws, program, measured, capsys, tmp_path)


def test_measure_shows_file_beside_simulated(example_workspace, tmp_path, capsys):
    ws, program = _workspace(example_workspace, tmp_path)
    sim = simulate(program)
    measured = tmp_path / "tasks.csv"
    measured.write_text("task,cycles\n0,1000\n1,2000\n")
    assert main(["measure", str(ws.root), "--measured", str(measured)]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(ln.split() for ln in lines if ln.split()[:2] == ["0", "1"])
    cycles = sim.tasks.end[1] - sim.tasks.start[1]
    assert row[2:4] == ["2000", str(cycles)]
    assert float(row[4].rstrip("%")) == pytest.approx(100 * (cycles - 2000) / 2000, abs=0.01)


@pytest.mark.parametrize("content, line, reason", [
    ("dispatch,cycles\n0,12\n0,abc\n", 3, "cycles 'abc'"),
    ("id,cycles\n0,1\n", 1, "no `task` or `dispatch` column"),
    ("dispatch,time\n0,1\n", 1, "no `cycles` column"),
    ("# comment\ndispatch,cycles\n0,5\n0,6\n", 4, "measured twice"),
    ("dispatch,cycles\n-1,5\n", 2, "non-negative integer id"),
    ("dispatch,cycles\n\u00b2,5\n", 2, "non-negative integer id"),  # a superscript two: str.isdigit says yes
    ("dispatch,cycles\n7,5\n", 2, "no such dispatch"),
    ("dispatch,cycles\n0,-5\n", 2, "expected a positive number"),
    ("dispatch,cycles\n0,0\n", 2, "cycles '0': expected a positive number"),
    ("task,cycles\n0,12\n1,0.0\n", 3, "cycles '0.0': expected a positive number"),
    ("task,dispatch,cycles\n3,0,12\n03,0,13\n", 3, "task 3 measured twice (first on line 2)"),
    ("dispatch,cycles\n0\n", 2, "1 columns"),
])
def test_malformed_measured_csv_is_one_line(example_workspace, tmp_path, capsys, content, line, reason):
    ws, _ = _workspace(example_workspace, tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    out = tmp_path / "fitted.toml"
    for argv in (["calibrate", str(ws.root), "--measured", str(bad), "--out", str(out)],
                 ["calibrate", str(ws.root), "--measured", str(bad), "--out", "some-name"],
                 ["measure", str(ws.root), "--measured", str(bad), "--csv", str(tmp_path / "cmp.csv")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{bad}:{line}:" in err[0] and reason in err[0], err
    assert not out.exists() and not (tmp_path / "cmp.csv").exists()
    assert not user_targets_dir().exists() or not any(user_targets_dir().iterdir())


def test_read_measured_accepts_simulate_csv(example_workspace, tmp_path):
    _, program = _workspace(example_workspace, tmp_path)
    out = tmp_path / "sim.csv"
    assert main(["simulate", str(tmp_path / "ws"), "--csv", str(out)]) == 0
    m = read_measured(out)
    assert m.level == "dispatch" and m.cycles == {0: float(simulate(program).dispatches[0].cycles)}
    with pytest.raises(BadFile, match="missing.csv: cannot read"):
        read_measured(tmp_path / "missing.csv")
    (tmp_path / "empty.csv").write_text("dispatch,cycles\n")
    with pytest.raises(MeasuredError, match="empty.csv:1: no measurements"):
        read_measured(tmp_path / "empty.csv")


def test_set_keys_keeps_comments_and_adds_missing_tables():
    text = (RESOURCES / "tiny.toml").read_text()
    new = set_keys(text, {"dram.bytes_per_cycle": 7, "mac_array.macs_per_cycle.i8": 3, "name": "x"})
    data = tomllib.loads(new)
    assert data["dram"]["bytes_per_cycle"] == 7 and data["mac_array"]["macs_per_cycle"]["i8"] == 3
    assert data["name"] == "x"
    assert [ln for ln in new.splitlines() if ln.lstrip().startswith("#")] == \
        [ln for ln in text.splitlines() if ln.lstrip().startswith("#")]
    parse_target(new)


# -- the workspace's backend, and fits the measurements cannot determine -------------------------
TOY_HIDDEN = {"dram.bytes_per_cycle": 40, "dma.setup_cycles": 100}


def test_calibrate_fits_with_the_workspace_backend(example_workspace, tmp_path, capsys):
    """A toy workspace: the toy's target keys are read and kept, its cost model is the one fitted
    through (with the generic cost the hidden values would not come back)."""
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    assert main(["simulate", str(tmp_path / "ws"), "--backend", "toy"]) == 0
    ws = Workspace.open(tmp_path / "ws")
    program = NpuProgram.load(json_path(ws))
    assert program.target.backend == "toy"
    measured = tmp_path / "tasks.csv"
    measured.write_text(task_csv_text(simulate(program, with_values(program.target, TOY_HIDDEN))))
    capsys.readouterr()
    assert main(["calibrate", str(ws.root), "--measured", str(measured), "--keys", ",".join(TOY_HIDDEN),
                 "--out", "toy-fitted"]) == 0
    written = user_targets_dir() / "toy-fitted.toml"
    fitted = tomllib.loads(written.read_text())
    assert fitted["toy"] == tomllib.loads(registry.load("toy").default_target.read_text())["toy"]
    assert abs(fitted["dram"]["bytes_per_cycle"] - 40) <= 2 and abs(fitted["dma"]["setup_cycles"] - 100) <= 5
    # the named user target is taken by --target NAME, with the toy's keys
    assert main(["simulate", str(ws.root), "--target", "toy-fitted"]) == 0
    assert "on toy-fitted" in capsys.readouterr().out


def test_too_many_default_keys_for_per_task_measurements_names_them(example_workspace, tmp_path, capsys):
    """Without --keys the keys are chosen for the user: the line names them, and per-task measurements
    are not suggested to a per-task file (issue 38, eyes38)."""
    ws, _program = _workspace(example_workspace, tmp_path)
    measured = tmp_path / "m.csv"
    measured.write_text("task,cycles\n0,5000\n")
    capsys.readouterr()
    assert main(["calibrate", str(ws.root), "--measured", str(measured), "--out", str(tmp_path / "f.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dram.bytes_per_cycle" in err[0] and "measured task" in err[0], err
    assert "per-task measurements" not in err[0], err


@pytest.mark.parametrize("content, keys, says", [
    (None, "dram.bytes_per_cycle,dma.setup_cycles",
     "--keys: 2 keys (dram.bytes_per_cycle, dma.setup_cycles) but 1 measured dispatch: at most 1 key"),
    ("task", "vector.lanes", "--keys: vector.lanes: the measurements do not constrain it"),
    ("task", "dram.bytes_per_cycle,cpu.launch_cycles", "--keys: cpu.launch_cycles: the measurements do not "
                                                       "constrain it"),
    ("task", "mac_array.macs_per_cycle.i8", "--keys: mac_array.macs_per_cycle.i8: the measurements do not"),
])
def test_underdetermined_fits_are_refused(example_workspace, tmp_path, capsys, content, keys, says):
    ws, program = _workspace(example_workspace, tmp_path)
    measured = tmp_path / "m.csv"
    result = simulate(program, with_values(program.target, HIDDEN))
    measured.write_text(task_csv_text(result) if content == "task" else
                        f"dispatch,cycles\n0,{result.dispatches[0].cycles}\n")
    out = tmp_path / "fitted.toml"
    capsys.readouterr()
    assert main(["calibrate", str(ws.root), "--measured", str(measured), "--keys", keys, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"npu-studio: error: {measured}: ") and says in err[0], err
    assert not out.exists()


def test_out_may_not_take_a_bundled_name(example_workspace, tmp_path, capsys):
    ws, program = _workspace(example_workspace, tmp_path)
    measured = tmp_path / "m.csv"
    measured.write_text(task_csv_text(simulate(program)))
    assert main(["calibrate", str(ws.root), "--measured", str(measured), "--out", "tiny"]) == 2
    assert "a bundled target is named 'tiny'" in capsys.readouterr().err
    assert not user_targets_dir().exists() or not any(user_targets_dir().iterdir())


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_measured_file_that_is_not_regular_is_refused_without_waiting(example_workspace, tmp_path, special):
    """Run as a child with a time limit: a read that waited on the FIFO would hang the test otherwise."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    ws, _ = _workspace(example_workspace, tmp_path)
    path = tmp_path / "measured.csv"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    else:
        path = special
    for command in ("calibrate", "measure"):
        child = subprocess.run([sys.executable, "-m", "npu_studio.cli", command, str(ws.root), "--measured", str(path)],
                               capture_output=True, text=True, timeout=60, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
        err = child.stderr.strip().splitlines()
        assert child.returncode == 2 and len(err) == 1 and err[0].startswith(f"npu-studio: error: {path}: "), err
        assert ("not a regular file" if special != "folder" else "is a folder") in err[0]


def test_measure_and_calibrate_keep_the_measurements_for_the_schedule(example_workspace, tmp_path, capsys):
    from npu_studio.core.npu.calibrate.measured import recorded

    ws, program = _workspace(example_workspace, tmp_path)
    assert recorded(ws.root, program) is None  # nothing measured yet: the schedule draws no measured rows
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("task,cycles\n0,1000\n1,2000.5\n")
    assert main(["measure", str(ws.root), "--measured", str(tasks)]) == 0
    kept = recorded(ws.root, program)
    assert kept.level == "task" and kept.cycles == {0: 1000.0, 1: 2000.5}
    # planned again (another tiling): per-task measurements no longer fit it, per-dispatch ones do
    again = run_for_workspace(ws, "tiny")
    assert recorded(ws.root, again) is None
    per_dispatch = tmp_path / "dispatches.csv"
    per_dispatch.write_text("dispatch,cycles\n0,123456\n")
    assert main(["measure", str(ws.root), "--measured", str(per_dispatch)]) == 0
    assert recorded(ws.root, run_for_workspace(ws)).cycles == {0: 123456.0}
