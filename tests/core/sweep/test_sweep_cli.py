"""`npu-studio sweep`: the summary, and bad input as one line with exit code 2."""

from __future__ import annotations

import time

import pytest

from npu_studio.cli import main

GOOD = """
target = "default"
models = ["{model}"]

[parameters]
"sram.size_kib" = [32, 64]
"dram.bytes_per_cycle" = [16, 64]
"""


def _spec(tmp_path, text, model):
    path = tmp_path / "s.toml"
    path.write_text(text.replace("{model}", str(model)))
    return path


def test_summary_and_resume(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD + "\n[constraints]\ncycles = { max = 2000000 }\n", sweep_models[0])
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 rows: 4 feasible, 0 infeasible")
    assert "computed 4, from the cache 0" in out and "front time_us vs energy_pj" in out
    assert "checks: monotone in SRAM and bandwidth" in out
    assert (tmp_path / "o" / "results.parquet").is_file() and (tmp_path / "o" / "results.csv").is_file()
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o"), "--resume"]) == 0
    assert "computed 0, from the cache 4" in capsys.readouterr().out


@pytest.mark.parametrize("edit, where, reason", [
    (lambda t: t.replace('"sram.size_kib"', '"sram.size_mib"'), 6,
     "parameters.sram.size_mib = 32: sram.size_mib: unknown key"),
    (lambda t: t.replace("[16, 64]", "[]"), 7, "parameters.dram.bytes_per_cycle: empty"),
    (lambda t: t.replace("[16, 64]", "{ range = [64, 16, 8] }"), 7,
     "parameters.dram.bytes_per_cycle: empty"),
    (lambda t: t + "\n[constraints]\narea_mm2 = { max = 0.5 }\n", None,
     "constraints.area_mm2: no point meets it"),
    (lambda t: t.replace('"default"', '"nope.toml"'), None, "target:"),
    (lambda t: "foo = 1" + t, 1, "foo: unknown key"),
    (lambda t: 'metrics = ["cycles", "joules"]' + t, 1, "metrics: joules: unknown metric"),
    (lambda t: t + "\n[constraints]\nwatts = { max = 1 }\n", 10, "constraints: watts: unknown metric"),
])
def test_bad_spec_is_one_line_exit_2(sweep_models, tmp_path, capsys, edit, where, reason):
    spec = _spec(tmp_path, edit(GOOD), sweep_models[0])
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    prefix = f"npu-studio: error: {spec}:{where}: " if where else f"npu-studio: error: {spec}"
    assert err.startswith(prefix) and reason in err


def test_constraint_no_run_meets(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD + "\n[constraints]\ncycles = { max = 10 }\n", sweep_models[0])
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"npu-studio: error: {spec}: constraints.cycles: no point meets")


def test_unreachable_dask_address(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    start = time.monotonic()
    assert main(["sweep", str(spec), "--dask", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "npu-studio: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9: " \
        + err.split("tcp://127.0.0.1:9: ", 1)[1] and len(err.splitlines()) == 1
    assert time.monotonic() - start < 30


def test_bad_jobs(sweep_models, tmp_path, capsys):
    spec = _spec(tmp_path, GOOD, sweep_models[0])
    assert main(["sweep", str(spec), "--jobs", "0"]) == 2
    assert capsys.readouterr().err.strip() == \
        "npu-studio: error: --jobs: expected a positive number of workers, got 0"


def test_the_bundled_example_runs_and_compiles_its_model_once(tmp_path, capsys, monkeypatch):
    from npu_studio.core.workspace.workspace import default_workspace_for
    from npu_studio.resources import EXAMPLE_MODEL, SWEEPS_DIR

    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path / "workspaces"))
    spec = SWEEPS_DIR / "example.toml"
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("28 rows: 28 feasible")  # 7 SRAM sizes (16 KiB-1 MiB) x 4 bandwidths
    assert "checks: monotone in SRAM and bandwidth" in out
    flow = default_workspace_for(EXAMPLE_MODEL) / "phases"
    stamps = {p: p.stat().st_mtime_ns for p in flow.rglob("*")}
    assert stamps
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o2")]) == 0
    assert {p: p.stat().st_mtime_ns for p in flow.rglob("*")} == stamps  # reused, not recompiled
