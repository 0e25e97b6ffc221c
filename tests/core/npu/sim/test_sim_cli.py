"""`npu-studio simulate`: summary, outputs (result schema, CSV, Perfetto trace), errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sim_checks import TRACE_SCHEMA, check_trace

from npu_studio.cli import main
from npu_studio.core.npu.sim.results import SimResult

ROOT = Path(__file__).resolve().parents[4]
@pytest.fixture(scope="module")
def example_json(example_flow, tmp_path_factory):
    from npu_studio.core.npu.plan.passes import run_npu_pipeline
    from npu_studio.core.npu.target.target import load_target

    path = tmp_path_factory.mktemp("sim") / "model.npu.json"
    run_npu_pipeline(example_flow, load_target()).save_json(path)
    return path


def simulate(argv):
    return main(["simulate", *map(str, argv)])


def test_outputs(example_json, tmp_path, capsys):
    import jsonschema  # a declared test dependency: missing, this fails rather than skips
    out = {k: tmp_path / f"out.{k}" for k in ("json", "csv", "trace")}
    assert simulate([example_json, "--json", out["json"], "--csv", out["csv"], "--trace", out["trace"]]) == 0
    text = capsys.readouterr().out
    result = SimResult.load_json(out["json"])
    n = len(json.loads(example_json.read_text())["tasks"])
    assert text.startswith(f"{n} tasks, {len(result.steps)} steps on npu-mid (1000 MHz): "
                           f"{result.total_cycles} cycles = {result.total_cycles / 1000:.3f} us")
    assert "Dispatch #0 conv" in text and "compute-bound" in text and "mac " in text
    schema = json.loads((ROOT / "docs" / "npu-sim-result.schema.json").read_text())
    jsonschema.validate(json.loads(out["json"].read_text()), schema)
    rows = list(csv.reader(out["csv"].open()))
    assert rows[0][4] == "start (cycles)" and "DRAM read (bytes)" in rows[0]
    assert rows[1][:4] == ["0", "conv", "Conv_0", "NPU"] and int(rows[1][6]) == result.total_cycles
    trace = json.loads(out["trace"].read_text())
    jsonschema.validate(trace, TRACE_SCHEMA)
    check_trace(trace["traceEvents"], result)


def test_workspace_keeps_the_last_result(fresh_example, capsys):
    from npu_studio.core.npu.store.sim_store import load_last_result, result_path

    assert simulate([fresh_example.root]) == 0
    first = capsys.readouterr().out
    saved = load_last_result(fresh_example)
    assert result_path(fresh_example).parent == fresh_example.root / "npu"
    assert (fresh_example.root / "npu" / "model.npu.json").exists()
    assert f"{saved.total_cycles} cycles" in first
    assert simulate([fresh_example.root, "--target", "tiny"]) == 0  # re-planned: a CPU fallback
    assert "cpu-bound" in capsys.readouterr().out
    assert load_last_result(fresh_example).target == "npu-tiny"


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("npu-studio: error: "), err
    for n in needles:
        assert n in err, err


def test_errors_are_one_line_exit_2(example_json, tmp_path, capsys):
    data = json.loads(example_json.read_text())
    bad = tmp_path / "bad.npu.json"
    bad.write_text(json.dumps({**data, "version": 7}))
    assert simulate([bad]) == 2
    _one_line_error(capsys, str(bad), "version 7 not supported")
    del data["tasks"][0]["steps"]
    bad.write_text(json.dumps(data))
    assert simulate([bad]) == 2
    _one_line_error(capsys, str(bad), "schema", "steps")
    data = json.loads(example_json.read_text())
    # task 0 waits for the last even task, which reaches back to 0 through t -> t-2
    data["tasks"][0]["deps"] = [(len(data["tasks"]) - 1) // 2 * 2]
    bad.write_text(json.dumps(data))
    assert simulate([bad]) == 2
    _one_line_error(capsys, str(bad), "cycle")
    assert simulate([example_json, "--target", "tiny"]) == 2
    _one_line_error(capsys, "npu-tiny's SRAM (65536 bytes) cannot hold the plan")
    bad.write_text("{not json")
    assert simulate([bad]) == 2
    _one_line_error(capsys, f"{bad}:1:2: not JSON")
