"""The timing simulation: hand-computed cycles and schedule invariants."""

from __future__ import annotations

import dataclasses

import pytest
from sim_checks import check_schedule
from sim_synth import program as synth_program

from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Step, Task
from npu_studio.core.npu.sim import SimError, simulate
from npu_studio.core.npu.target.target import load_target


def _target(**kw):
    base = dict(name="hand", clock_mhz=100, mac_rows=8, mac_cols=8, dataflow="output-stationary",
                vector_lanes=16, sram_bytes=4096, dram_bytes_per_cycle=16, dma_channels=2,
                dma_setup_cycles=10, cpu_launch_cycles=100, cpu_ops_per_cycle=4)
    base.update(kw)
    return dataclasses.replace(load_target("tiny"), **base)


def _info(index=0, kind="matmul", dims=("M", "N", "K"), ranges=(8, 8, 8), legal=True):
    return DispatchInfo(index, f"d{index}", "loc", kind, "linalg.matmul", legal, "", dims, ranges,
                        ("parallel", "parallel", "reduction"), ranges if legal else (), (0, 1, 2),
                        1, 0, ("x",), ("y",), ())


def _sram(*ids, size=1024):
    return tuple(Buffer(b, size, "f32", (), "sram", i * size, "tile", (0, 1)) for i, b in enumerate(ids))


DRAM = tuple(Buffer(b, 4096, "f32", (), "dram", i * 4096, "input", (0, 1)) for i, b in enumerate("xwy"))


def _prog(target, tasks, buffers, infos=(_info(),)):
    return NpuProgram(target, tuple(infos), DRAM + buffers, tuple(tasks), 0, 0)


def test_one_tile_by_hand():
    t = _target()
    task = Task(0, 0, "npu.matmul", False, (0, 0, 0), (8, 8, 8), (
        Step("dma_in", ("x",), ("a",), bytes=640),
        Step("compute", ("a",), ("c",), ops=512),
        Step("dma_out", ("c",), ("y",), bytes=256)), ())
    r = simulate(_prog(t, [task], _sram("a", "c")))
    # DMA in: 10 setup + 640 / 16; 8x8x8 on 8x8 OS: one fold of K + R + C - 2 = 22; DMA out 10 + 16
    assert list(zip(r.steps.start, r.steps.end)) == [(0, 50), (50, 72), (72, 98)]
    assert r.total_cycles == 98 and r.time_us == pytest.approx(0.98)
    assert r.engines == ("dma0", "dma1", "mac", "vector", "cpu")
    assert r.engine_busy == (50, 26, 22, 0, 0)
    assert r.overlap.dma_only == 76 and r.overlap.compute_only == 22 and r.overlap.both == 0
    assert r.critical_path == (0,)
    assert r.sram_peak == 2048 and r.allocations[0].free == 72 and r.allocations[1].free == 98
    d = r.dispatches[0]
    assert (d.cycles, d.dram_read, d.dram_written, d.mac_cycles) == (98, 640, 256, 22)
    assert d.mac_utilization == pytest.approx(512 / (64 * 98))
    assert d.bound == "memory"  # 22 compute cycles against (640 + 256) / 16 = 56


@pytest.mark.parametrize("channels", [3, 5])
def test_concurrent_transfers_share_dram_bandwidth(channels):
    t = _target(dma_channels=channels, dma_setup_cycles=0)
    task = Task(0, 0, "npu.matmul", False, (0, 0, 0), (8, 8, 8), (
        Step("dma_in", ("x",), ("a",), bytes=160), Step("dma_in", ("w",), ("b",), bytes=160),
        Step("compute", ("a", "b"), ("c",), ops=512)), ())
    r = simulate(_prog(t, [task], _sram("a", "b", "c")))
    # alone each takes 160 / 16 = 10 cycles; together they split 16 B/cycle: 20 cycles,
    # however many channels there are
    assert list(zip(r.steps.start, r.steps.end))[:2] == [(0, 20), (0, 20)]
    assert tuple(r.steps.engine[:2]) == (0, 1)


def test_cpu_and_vector_costs():
    t = _target()
    infos = (_info(0, legal=False), _info(1, kind="elementwise", dims=("d0", "d1", "d2")))
    tasks = [Task(0, 0, "npu.fallback", True, (), (), (Step("cpu", ("x",), ("y",), ops=1000),), ()),
             Task(1, 1, "npu.eltwise", False, (0, 0, 0), (8, 8, 8),
                  (Step("compute", ("a",), ("c",), ops=100),), (0,))]
    r = simulate(_prog(t, tasks, _sram("a", "c"), infos))
    # CPU: 100 launch + 1000 / 4; vector: ceil(100 / 16 lanes) = 7
    assert list(zip(r.steps.start, r.steps.end)) == [(0, 350), (350, 357)]
    assert tuple(r.steps.engine) == (4, 3)
    assert [d.bound for d in r.dispatches] == ["cpu", "compute"]  # no DMA at all
    assert r.dispatches[0].dram_read == 4096 and r.critical_path == (0, 1)


def test_dependency_cycle_is_an_error():
    t = _target()
    step = (Step("compute", ("a",), ("c",), ops=8),)
    tasks = [Task(0, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, step, (2,)),
             Task(1, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, step, (0,)),
             Task(2, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, step, (1,))]
    with pytest.raises(SimError, match=r"cycle: (0 -> 1 -> 2 -> 0|1 -> 2 -> 0 -> 1|2 -> 0 -> 1 -> 2)"):
        simulate(_prog(t, tasks, _sram("a", "c")))
    # a dependency on a later task without a cycle runs in a topological order
    tasks[0] = dataclasses.replace(tasks[0], deps=())
    tasks[1] = dataclasses.replace(tasks[1], deps=(2,))
    tasks[2] = dataclasses.replace(tasks[2], deps=(0,))
    r = simulate(_prog(t, tasks, _sram("a", "c")))
    assert r.tasks.start[1] >= r.tasks.end[2] >= r.tasks.start[2] >= r.tasks.end[0]


def test_task_without_steps_readies_its_dependent_once():
    # task 0 has no steps and no dependencies; task 2 waits for it and, on the MAC array,
    # for task 1: it must run after task 1, not be counted ready twice
    t = _target()
    step = (Step("compute", ("a",), ("c",), ops=512),)
    tasks = [Task(0, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, (), ()),
             Task(1, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, step, ()),
             Task(2, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, step, (0,))]
    r = simulate(_prog(t, tasks, _sram("a", "c")))
    # 8x8x8 on an 8x8 output-stationary array: K + R + C - 2 = 22 cycles each
    assert list(zip(r.steps.start, r.steps.end)) == [(0, 22), (22, 44)]
    assert r.critical_path == (1, 2)


def test_program_without_steps_takes_no_time():
    t = _target()
    for tasks in ([], [Task(0, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, (), ()),
                       Task(1, 0, "npu.matmul", False, (0,) * 3, (8,) * 3, (), (0,))]):
        r = simulate(_prog(t, tasks, _sram("a", "c")))
        assert (r.total_cycles, len(r.steps), r.critical_path, r.sram_peak) == (0, 0, (), 0)
        assert tuple(r.tasks.start) == tuple(r.tasks.end) == (0,) * len(tasks)


def test_sram_too_small_is_an_error():
    t = _target()
    task = Task(0, 0, "npu.matmul", False, (0,) * 3, (8,) * 3,
                (Step("compute", ("a",), ("c",), ops=8),), ())
    p = _prog(t, [task], _sram("a", "c"))
    with pytest.raises(SimError, match=r"SRAM \(1024 bytes\) cannot hold the plan: buffer c"):
        simulate(p, _target(sram_bytes=1024))


def _tiles():
    t = load_target()
    # 4 x 4 output tiles, 2 reduction chunks each; a conv with a halo after it
    return t, synth_program([("matmul", (256, 256, 256), (64, 64, 128)),
                             ("conv", (34, 34, 3, 3, 16, 32), (32, 8, 32, 16, 3, 3))], t)


def test_invariants_and_double_buffering():
    t, p = _tiles()
    r = simulate(p)
    check_schedule(p, r)
    st = r.steps
    comp = [s for s in range(len(st)) if st.kind[s] == 1 and st.task[s] < p.dispatches[0].num_tiles]
    loads = {st.task[s]: s for s in range(len(st)) if st.kind[s] == 0}
    # some tile's load runs while the previous tile computes
    assert any(st.start[loads[st.task[c] + 1]] < st.end[c] and st.end[loads[st.task[c] + 1]] > st.start[c]
               for c in comp[:-1] if st.task[c] + 1 in loads)
    assert r.overlap.both > 0
    assert sum(vars(r.overlap).values()) == r.total_cycles
    cp = r.critical_path
    assert cp[-1] == max(range(len(p.tasks)), key=lambda i: (r.tasks.end[i], -i)) and list(cp) == sorted(cp)


def test_deterministic_and_round_trip(tmp_path):
    from npu_studio.core.npu.sim.results import SimResult

    t, p = _tiles()
    a, b = simulate(p), simulate(p)
    assert a.to_json() == b.to_json()
    path = tmp_path / "r.json"
    a.save_json(path)
    back = SimResult.load_json(path)
    assert back == a and back.to_json() == a.to_json()


def test_less_bandwidth_or_fewer_channels_is_not_faster():
    t, p = _tiles()
    base = simulate(p).total_cycles
    for slower in (dataclasses.replace(t, dram_bytes_per_cycle=t.dram_bytes_per_cycle // 2),
                   dataclasses.replace(t, dma_setup_cycles=t.dma_setup_cycles * 4),
                   dataclasses.replace(t, mac_rows=16)):
        assert simulate(p, slower).total_cycles > base
