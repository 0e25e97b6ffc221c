"""A hand-made schedule: two dispatches, four tasks, every number chosen here.

dispatch 0 (conv, 3 tasks on DMA0/MAC/DMA1) then dispatch 1 (a CPU fallback).
    task 0: DMA0 dma_in 0-100, MAC compute 100-400
    task 1: DMA0 dma_in 100-200, MAC compute 400-700 (deps 0)
    task 2: MAC compute 700-900, DMA1 dma_out 900-1000 (deps 1)
    task 3: CPU 1000-1500 (deps 2)
"""

from __future__ import annotations

import numpy as np

from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Step, Task
from npu_studio.core.npu.report.schedule_model import ScheduleModel, SummaryRow, Totals
from npu_studio.core.npu.target.target import load_target

ENGINES = ["DMA0", "DMA1", "MAC", "VEC", "CPU"]


def sample_program() -> NpuProgram:
    conv = DispatchInfo(0, "main$async_dispatch_0", 'loc("conv_node")', "conv", "linalg.conv_2d_nchw_fchw",
                        True, "", ("F", "OH"), (8, 16), ("parallel", "parallel"), (8, 8), (0, 1), 2, 4096,
                        ("in",), ("mid",), ())
    soft = DispatchInfo(1, "main$async_dispatch_1", 'loc("softmax_node")', "other", "linalg.softmax",
                        False, "unsupported op kind other", (), (), (), (), (), 1, 0, ("mid",), ("out",), (0,))
    mk = lambda kind, b=0, o=0: Step(kind, ("a",), ("b",), bytes=b, ops=o)  # noqa: E731
    tasks = (
        Task(0, 0, "npu.conv", False, (0, 0), (8, 8), (mk("dma_in", 512), mk("compute", o=64)), ()),
        Task(1, 0, "npu.conv", False, (0, 8), (8, 8), (mk("dma_in", 512), mk("compute", o=64)), (0,)),
        Task(2, 0, "npu.conv", False, (0, 8), (8, 8), (mk("compute", o=64), mk("dma_out", 256)), (1,)),
        Task(3, 1, "npu.fallback", True, (), (), (mk("cpu", o=100),), (2,)),
    )
    bufs = (Buffer("in", 1024, "f32", (256,), "dram", 0, "input", (0, 4)),)
    return NpuProgram(load_target(), (conv, soft), bufs, tasks, sram_peak=2048, dram_peak=1024)


def sample_model(scale: float = 1.0) -> ScheduleModel:
    """`scale` stretches every time (a slower run of the same program)."""
    bars = [  # task, engine, start, end, kind, bytes
        (0, 0, 0, 100, "dma_in", 512), (0, 2, 100, 400, "compute", 0),
        (1, 0, 100, 200, "dma_in", 512), (1, 2, 400, 700, "compute", 0),
        (2, 2, 700, 900, "compute", 0), (2, 1, 900, 1000, "dma_out", 256),
        (3, 4, 1000, 1500, "cpu", 0),
    ]
    a = np.array([(t, e, s * scale, x * scale, b) for t, e, s, x, _, b in bars])
    total = int(1500 * scale)
    rows = [
        SummaryRow(0, "conv", "conv_node", int(1000 * scale), 1000 / 1500, 0.5, 1280, 2048, "compute"),
        SummaryRow(1, "other", "softmax_node", int(500 * scale), 500 / 1500, 0.0, 0, 0, "cpu"),
    ]
    return ScheduleModel(
        engines=list(ENGINES),
        bar_task=a[:, 0].astype(int), bar_engine=a[:, 1].astype(int),
        bar_start=a[:, 2], bar_end=a[:, 3], bar_kind=[b[4] for b in bars], bar_bytes=a[:, 4].astype(int),
        task_start=np.array([0, 100, 700, 1000]) * scale, task_end=np.array([400, 700, 1000, 1500]) * scale,
        task_dispatch=np.array([0, 0, 0, 1]),
        sram_times=np.array([0, 100, 1000]) * scale, sram_bytes=np.array([1024, 2048, 0]),
        sram_capacity=4096,
        alloc_buffer=["slot0", "slot1"], alloc_addr=np.array([0, 1024]), alloc_size=np.array([1024, 1024]),
        alloc_start=np.array([0, 100]) * scale, alloc_end=np.array([700, 1000]) * scale,
        alloc_dispatch=np.array([0, 0]),
        critical_path=[0, 1, 2, 3],
        totals=Totals(total, 1000.0, {"DMA0": 200 / 1500, "MAC": 800 / 1500}, {"both": 100}),
        rows=rows, program=sample_program(),
    )
