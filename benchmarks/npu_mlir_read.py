"""Reading the NPU MLIR form of a 125,000-task program back: MLIR's parser and bindings
(how npu_dialect.from_mlir read it before) against the fast reader of the printed form.

    python benchmarks/npu_mlir_read.py

The program: the example conv planned for a 4 KiB-SRAM target (15,625 tasks), copied
8 times under new dispatch, buffer and task ids. One run each; both results must equal
the program that was printed.
"""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from flowgen import flow_snapshot  # noqa: E402
from perf_doc import write_section  # noqa: E402

from npu_studio.core.npu.program import npu_dialect, npu_text_reader  # noqa: E402
from npu_studio.core.npu.program.npu_ir import NpuProgram  # noqa: E402
from npu_studio.core.npu.plan.passes import run_npu_pipeline  # noqa: E402
from npu_studio.core.npu.target.target import RESOURCES, parse_target  # noqa: E402

COPIES = 8


def copies(p: NpuProgram, n: int) -> NpuProgram:
    nd, nt = len(p.dispatches), len(p.tasks)
    dispatches, buffers, tasks = [], [], []
    for k in range(n):
        def ren(ids, k=k):
            return tuple(f"c{k}.{i}" for i in ids)

        dispatches += [replace(d, index=d.index + k * nd, deps=tuple(x + k * nd for x in d.deps),
                               inputs=ren(d.inputs), outputs=ren(d.outputs)) for d in p.dispatches]
        buffers += [replace(b, id=f"c{k}.{b.id}") for b in p.buffers]
        tasks += [replace(t, id=t.id + k * nt, dispatch=t.dispatch + k * nd, deps=tuple(x + k * nt for x in t.deps),
                          steps=tuple(replace(s, srcs=ren(s.srcs), dsts=ren(s.dsts)) for s in t.steps))
                  for t in p.tasks]
    return replace(p, dispatches=tuple(dispatches), buffers=tuple(buffers), tasks=tuple(tasks))


def timed(fn):
    """fn() timed with the garbage it leaves for the cycle collector (from_mlir pauses it)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    gc.collect()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    text = (RESOURCES / "tiny.toml").read_text()
    text = text.replace('supported = ["f16", "bf16", "i8"]', 'supported = ["f32", "f16", "bf16", "i8"]')
    target = parse_target(text.replace("size_kib = 64", "size_kib = 4"), "tiny_4k.toml")
    one = run_npu_pipeline(flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx"), target)
    program = copies(one, COPIES)
    mlir = npu_dialect.to_mlir(program)

    fast, fast_wall, fast_cpu = timed(lambda: npu_dialect.from_mlir(mlir))
    assert npu_text_reader.read(mlir) is not None, "the printed form must take the fast path"
    reader = npu_text_reader.read
    npu_text_reader.read = lambda text: None  # from_mlir as it was: MLIR's parser and the bindings
    try:
        slow, slow_wall, slow_cpu = timed(lambda: npu_dialect.from_mlir(mlir))
    finally:
        npu_text_reader.read = reader
    assert fast == program and slow == program
    body = "\n".join([
        "## NPU MLIR read back (issue 10 item 8)",
        "",
        f"`benchmarks/npu_mlir_read.py`: `npu_dialect.from_mlir` on the printed NPU IR of a "
        f"{len(program.tasks):,}-task program ({len(mlir) / 2**20:.0f} MiB; the example conv on a 4 KiB SRAM, "
        f"{COPIES} copies), parse + verify + convert, one run each, a full garbage collection after "
        "each included; both equal the program printed.",
        "",
        "| reader | wall s | CPU s |",
        "|---|---|---|",
        f"| MLIR parser + Python bindings (as before; cycle collector paused here too) "
        f"| {slow_wall:.1f} | {slow_cpu:.1f} |",
        f"| fast reader of the printed form (`npu_text_reader.py`) | {fast_wall:.1f} | {fast_cpu:.1f} |",
        f"| **speed-up** (aim: at least 5) | **{slow_wall / fast_wall:.1f}x** | **{slow_cpu / fast_cpu:.1f}x** |",
        "",
        "Any text outside the printed form (comments, escapes, other attribute types, unknown SSA names)",
        "still goes through MLIR, which also gives its error messages.",
    ])
    print(body)
    write_section("npu-mlir-read-bench", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
