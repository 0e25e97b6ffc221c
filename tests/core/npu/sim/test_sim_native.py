"""The event loop in C (sim/native.py) against the Python loop it replaces: the same timeline, bit for
bit, on random programs: tiled layers from the real scheduler and hand-made task graphs (dependencies
in any order, tasks without steps, SRAM addresses reused, every DMA channel count)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from sim_synth import program as synth_program

from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Step, Task
from npu_studio.core.npu.sim import SimError, native
from npu_studio.core.npu.sim.plan import build_plan
from npu_studio.core.npu.sim.timing import _Columns, run
from npu_studio.core.npu.target.target import load_target


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    if native.library() is None:
        pytest.skip("no C compiler: the C loop cannot be built (the Python loop runs)")


def _timelines(prog, target):
    """Python's timeline and the C loop's (which must have run, not fallen back)."""
    plan = build_plan(prog, target)
    assert native.run_native(plan, _Columns(plan, target)) is not None
    return run(plan, target, native=False), run(plan, target, native=True)


def _fields(t):
    """The timeline's columns as lists (the C loop gives int64 arrays, the Python loop lists)."""
    return tuple(np.asarray(x, dtype=np.int64).tolist() for x in (t.start, t.end, t.cause, t.alloc, t.free))


def _same(a, b):
    assert _fields(a) == _fields(b)


def _target(rng, base="tiny", **kw):
    return dataclasses.replace(load_target(base), dma_channels=rng.randint(1, 5),
                               dram_bytes_per_cycle=rng.choice([1, 3, 8, 16, 64]),
                               dma_setup_cycles=rng.choice([0, 1, 10, 64]), **kw)


@pytest.mark.parametrize("seed", range(12))
def test_tiled_layers_from_the_scheduler(seed):
    rng = random.Random(seed)
    target = _target(rng, "default")
    layers = []
    for _ in range(rng.randint(1, 4)):
        m, n, k = (rng.choice([32, 64, 96, 128]) for _ in range(3))
        layers.append(("matmul", (m, n, k), (rng.choice([16, 32]), rng.choice([16, 32]), rng.choice([16, 32]))))
    python, c = _timelines(synth_program(layers, target, chain=rng.random() < 0.7), target)
    _same(python, c)
    assert max(c.end) > 0


def _random_program(rng, target) -> NpuProgram:
    n_tasks = rng.randint(1, 60)
    n_sram = rng.randint(1, 8)
    size = target.sram_bytes // 8
    # slots at a few offsets: buffers sharing an offset reuse addresses when their users do not overlap
    sram = [Buffer(f"s{i}", size, "f32", (), "sram", rng.randrange(8) * size, "tile", (0, 1)) for i in range(n_sram)]
    dram = (Buffer("x", 1 << 16, "f32", (), "dram", 0, "input", (0, 1)),)
    infos = (DispatchInfo(0, "d0", "loc", "elementwise", "linalg.generic", True, "", ("N",), (64,),
                          ("parallel",), (), (0,), 1, 0, ("x",), ("x",), ()),)
    tasks = []
    for t in range(n_tasks):
        steps = []
        for _ in range(rng.choice([0, 1, 2, 3, 3, 4])):
            kind = rng.choice(["dma_in", "dma_in", "compute", "dma_out", "cpu", "dma_copy"])
            buf = f"s{rng.randrange(n_sram)}"
            srcs, dsts = (("x",), (buf,)) if kind == "dma_in" else ((buf,), ("x",)) if kind == "dma_out" else (
                (buf,), (buf,)) if kind != "dma_copy" else (("x",), ("x",))
            steps.append(Step(kind, srcs, dsts, bytes=rng.choice([0, 1, 100, 4096]), ops=rng.choice([0, 1, 64, 5000])))
        deps = tuple(sorted(rng.sample(range(n_tasks), rng.randint(0, min(3, n_tasks))))) if rng.random() < 0.3 else \
            tuple(sorted(rng.sample(range(t), rng.randint(0, min(3, t)))))
        tasks.append(Task(t, 0, "npu.generic", False, (0,), (), tuple(steps), tuple(d for d in deps if d != t)))
    return NpuProgram(target, infos, dram + tuple(sram), tuple(tasks), 0, 0)


def test_random_task_graphs():
    rng = random.Random(2024)
    compared = in_c = 0
    for _ in range(600):
        target = _target(rng)
        prog = _random_program(rng, target)
        try:
            plan = build_plan(prog, target)
        except SimError:
            continue  # a cycle, or SRAM buffers in use together at the same addresses: refused before the loop
        outcomes = []
        for use_c in (False, True):
            try:
                tl = run(plan, target, native=use_c)
                outcomes.append(_fields(tl))
            except SimError as exc:  # a deadlock: both loops must name the same step
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        compared += 1
        in_c += native.run_native(plan, _Columns(plan, target)) is not None or not len(plan.step_task)
    assert compared > 100 and in_c == compared  # the C loop ran each time (no fallback made them equal; no steps: nothing to run)


def test_switched_off_runs_python(monkeypatch):
    rng = random.Random(5)
    target = _target(rng, "default")
    plan = build_plan(synth_program([("matmul", (64, 64, 64), (32, 32, 32))], target), target)
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert native.run_native(plan, _Columns(plan, target)) is None


def test_critical_path_in_c_is_the_python_walk():
    """stats.critical_path walks the causes in C after the C loop: the same tasks as the Python walk
    over the Python loop's lists."""
    from npu_studio.core.npu.sim.stats import critical_path

    rng = random.Random(11)
    for _ in range(4):
        target = _target(rng, "default")
        layers = [("matmul", (rng.choice([64, 128]),) * 3, (32, 32, 32)) for _ in range(rng.randint(1, 3))]
        plan = build_plan(synth_program(layers, target, chain=True), target)
        python, c = run(plan, target, native=False), run(plan, target, native=True)
        assert isinstance(c.cause, np.ndarray) and isinstance(python.cause, list)  # each walk is taken
        path = critical_path(plan, python, np.asarray(python.end))
        assert path and path == critical_path(plan, c, np.asarray(c.end))
        # the path ends at the task of the last step to end and starts at a step nothing released
        assert path[-1] == int(plan.step_task[int(np.argmax(python.end))])
