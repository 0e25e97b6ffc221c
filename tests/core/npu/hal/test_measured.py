"""Measured (IREE's runtime profile of the CPU build) against simulated (the NPU timing simulation)."""

from __future__ import annotations

import json
import shutil

import pytest

from npu_studio.cli import main
from npu_studio.core.npu.hal.measured import measured_table, profile_dispatches, sort_rows
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.run.runner import pick_function, random_inputs
from npu_studio.core.workspace.workspace import Workspace
from tests.zoo_cache import zoo_workspace


def test_example_profile_and_trace(example_workspace, tmp_path, capsys):
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    trace, table = tmp_path / "t.json", tmp_path / "t.json.rows"
    assert main(["measure", str(tmp_path / "ws"), "--trace", str(trace), "--json", str(table)]) == 0
    out = capsys.readouterr().out
    assert "measured CPU µs" in out and "simulated NPU µs" in out
    (row,) = json.loads(table.read_text())
    assert row["measured_cpu_us"] > 0 and row["simulated_npu_us"] > 0
    assert row["ratio"] == pytest.approx(row["measured_cpu_us"] / row["simulated_npu_us"])
    events = json.loads(trace.read_text())["traceEvents"]
    cpu = [e for e in events if e.get("cat") == "cpu"]
    npu = [e for e in events if e.get("ph") == "X" and e.get("cat") != "cpu"]
    assert len(cpu) == 1 and cpu[0]["dur"] == pytest.approx(row["measured_cpu_us"]) and npu
    assert {e["pid"] for e in cpu}.isdisjoint({e["pid"] for e in npu})


def test_unknown_sort_column_is_one_line(example_workspace, capsys):
    assert main(["measure", str(example_workspace.root), "--sort", "speed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sort speed: expected one of" in err


@pytest.mark.slow
def test_resnet50_table_has_a_measured_row_per_dispatch(tmp_path):
    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    program = run_for_workspace(ws)
    sig = pick_function(ws.snapshot_path("input"))
    events = profile_dispatches(ws.vmfb_path, sig.name, random_inputs(sig), parameters=ws.params_path)
    rows = measured_table(program, simulate(program), events)
    assert [r.dispatch for r in rows] == list(range(len(program.dispatches))) and len(rows) >= 50
    # every dispatch site ran once in the profiled call and was measured
    assert len(events) == len(rows) and all(r.measured_cpu_us > 0 for r in rows)
    npu = [r for r in rows if r.simulated_npu_us is not None]
    assert len(npu) == sum(d.legal for d in program.dispatches) and all(r.ratio > 0 for r in npu)
    assert sort_rows(rows)[0].ratio == max(r.ratio for r in npu)
