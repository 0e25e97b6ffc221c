"""A 24-point sweep (SRAM x bandwidth x array) over the example and a small CNN:
the same table with every executor, resume after a cancel, infeasible points."""

from __future__ import annotations

import threading

import pytest

from npu_studio.core.errors import Cancelled
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.sim.energy import energy
from npu_studio.core.sweep import evaluate
from npu_studio.core.sweep.executors import DaskExecutor, PoolExecutor, SerialExecutor
from npu_studio.core.sweep.run import run_sweep
from npu_studio.core.sweep.spec import load_spec
from npu_studio.core.sweep.table import read_table
from npu_studio.core.textio import read_text

SPEC = """
target = "default"
models = [{models}]

[parameters]
"sram.size_kib" = [16, 32, 64]
"dram.bytes_per_cycle" = [16, 64]
"mac_array.rows+mac_array.cols" = {{ log2 = [8, 64] }}
"""


def write_spec(tmp_path, models, text=SPEC):
    path = tmp_path / "sweep.toml"
    path.write_text(text.format(models=", ".join(f'"{m}"' for m in models)))
    return load_spec(path)


@pytest.fixture(scope="module")
def serial(sweep_models, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serial")
    spec = write_spec(tmp, sweep_models)
    evaluate.clear_memo()
    return spec, run_sweep(spec, tmp / "out", SerialExecutor())


def test_points_and_rows(serial, sweep_models):
    spec, result = serial
    assert len(spec.points()) == 24  # 3 x 2 x 4
    assert len(result.rows) == 48 and result.computed == 48 and result.cached == 0
    assert [(r["model"], r["point"]) for r in result.rows] == [
        (str(m), p) for m in sweep_models for p in range(24)]
    want = [{k: r[k] for k, _ in result.columns} for r in result.rows]
    assert read_table(result.parquet) == want

    def blank_as_none(rows):  # CSV has no difference between an empty string and no value
        return [{k: None if v == "" else v for k, v in r.items()} for r in rows]
    assert blank_as_none(read_table(result.csv)) == blank_as_none(want)


def test_rows_equal_an_unmemoised_run(serial, sweep_models):
    """The memoised plans and simulations give what a fresh pipeline and simulation give."""
    spec, result = serial
    points = spec.points()
    for model in sweep_models:
        text = read_text(model)
        for i in (0, 5, 13, 23):  # bandwidth-only, array and SRAM changes between them
            t = spec.target_of(points[i])
            row = next(r for r in result.rows if r["model"] == str(model) and r["point"] == i)
            program = run_npu_pipeline(text, t)
            if any(d.rule == "sram-fit" for d in program.dispatches):
                assert row["status"] == "infeasible"
                continue
            sim = simulate(program, t)
            assert (row["status"], row["cycles"]) == ("ok", sim.total_cycles)
            assert row["energy_pj"] == energy(program, sim, t).total_pj
            assert row["dram_bytes"] == sum(d.dram_read + d.dram_written for d in sim.dispatches)


def test_infeasible_point_is_a_row_with_its_reason(serial):
    _, result = serial
    cnn = [r for r in result.rows if r["model"] != result.rows[0]["model"]]
    small = [r for r in cnn if r["sram.size_kib"] == 16]
    assert len(small) == 8 and all(r["status"] == "infeasible" for r in small)
    # the softmax needs a whole row: 2048 f32 = 8 KiB, in and out, double-buffered: 32 KiB
    assert all("does not fit in SRAM" in r["reason"] and "32768" in r["reason"] for r in small)
    assert all(r["cycles"] is None and r["area_mm2"] > 0 for r in small)
    assert all(r["status"] == "ok" for r in cnn if r["sram.size_kib"] >= 32)
    assert not result.violations and not result.problems


def test_same_table_with_a_local_pool_and_dask(serial, sweep_models, tmp_path):
    spec, want = serial
    pool = run_sweep(spec, tmp_path / "pool", PoolExecutor(2))
    assert pool.rows == want.rows
    assert pool.csv.read_bytes() == want.csv.read_bytes()
    assert pool.parquet.read_bytes() == want.parquet.read_bytes()
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster, Client(cluster) as client:
        executor = DaskExecutor(client)
        assert executor.workers == 2
        dask = run_sweep(spec, tmp_path / "dask", executor)
    assert dask.csv.read_bytes() == want.csv.read_bytes()
    assert dask.parquet.read_bytes() == want.parquet.read_bytes()


def test_resume_after_cancel_computes_only_the_missing_points(serial, sweep_models, tmp_path):
    spec, want = serial
    out = tmp_path / "out"
    cancel = threading.Event()
    with pytest.raises(Cancelled) as e:
        run_sweep(spec, out, SerialExecutor(), on_progress=lambda done, total, eta: cancel.set(),
                  cancel=cancel)
    finished = len(e.value.finished)
    assert 0 < finished < 48
    assert len(list((out / "cache").glob("*.json"))) == finished
    evaluate.clear_memo()
    before = evaluate.stats["points"]
    result = run_sweep(spec, out, SerialExecutor(), resume=True)
    assert (result.computed, result.cached) == (48 - finished, finished)
    assert evaluate.stats["points"] - before == 48 - finished
    assert result.csv.read_bytes() == want.csv.read_bytes()
    again = run_sweep(spec, out, SerialExecutor(), resume=True)
    assert (again.computed, again.cached) == (0, 48)
    assert evaluate.stats["points"] - before == 48 - finished


def test_bandwidth_and_clock_points_reuse_the_plan(sweep_models, tmp_path):
    """With tiles chosen at the base bandwidth, points differing in bandwidth or clock plan once
    and only simulate; a clock-only change does not even simulate."""
    text = SPEC.replace('"sram.size_kib" = [16, 32, 64]', '"sram.size_kib" = [64]').replace(
        '{{ log2 = [8, 64] }}', '[32]').replace('[16, 64]', '[8, 16, 32, 64]') \
        + '"clock_mhz" = [500, 1000]\n'
    spec = write_spec(tmp_path, sweep_models[:1], 'tiles_for = "base-bandwidth"\n' + text)
    evaluate.clear_memo()
    before = dict(evaluate.stats)
    result = run_sweep(spec, tmp_path / "out", SerialExecutor())
    assert len(result.rows) == 8
    done = {k: evaluate.stats[k] - before[k] for k in before}
    assert done == {"plans": 1, "simulations": 4, "points": 8}
    flow = read_text(sweep_models[0])
    for row, point in zip(result.rows, spec.points()):
        t = spec.target_of(point)
        program = run_npu_pipeline(flow, spec.plan_target(t))  # planned at 64 bytes/cycle
        assert program.target.dram_bytes_per_cycle == 64
        assert row["cycles"] == simulate(program, t).total_cycles
        assert row["time_us"] == row["cycles"] / t.clock_mhz
