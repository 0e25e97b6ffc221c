"""The tile search against the greedy tiler alone: total simulated cycles
and NPU pipeline time per model; writes its section of docs/PERFORMANCE.md.

    python benchmarks/tile_search.py

Both runs use the same pipeline; the greedy one replaces the search by
`tiling.choose_tiles` at the target's full SRAM (what npu-tile did before).
Pipeline times are the best of 3 in a fresh process state (the search's
per-shape memo is cleared before each run).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu"))
sys.path.insert(0, str(HERE))

from flowgen import flow_snapshot, zoo_model  # noqa: E402
from perf_doc import write_section  # noqa: E402

from npu_studio.core.npu.plan import passes, tile_search  # noqa: E402
from npu_studio.core.npu.sim import simulate  # noqa: E402
from npu_studio.core.npu.target.target import load_target  # noqa: E402
from npu_studio.core.npu.plan.tiling import choose_tiles  # noqa: E402

MODELS = ("example", "resnet50", "squeezenet", "vgg19", "inception_v1")


def _greedy(problem, target, _dispatch_of):
    return choose_tiles(problem, target.sram_bytes)


def _run(flow, target, search):
    passes.best_tiling = tile_search.best_tiling if search else _greedy
    best = None
    for _ in range(3):
        tile_search.clear_memo()
        t = time.perf_counter()
        program = passes.run_npu_pipeline(flow, target)
        dt = time.perf_counter() - t
        best = dt if best is None or dt < best else best
    return best, simulate(program).total_cycles


def main() -> int:
    default = load_target()
    small = dataclasses.replace(load_target("tiny"), name="tiny-f32",
                                dtypes=("f32", "f16", "bf16", "i8"))
    lines = [
        "## Tile search (issue 9)",
        "",
        "`benchmarks/tile_search.py`, one run. Total cycles of the whole program as simulated, with the "
        "tiles the search picks against the greedy tiler's tile at the full SRAM; NPU pipeline wall time "
        "(best of 3, the search's memo cleared each time). `tiny-f32` is the bundled 64 KiB target with "
        "f32 enabled.",
        "",
        "| model | target | greedy cycles | search cycles | **search / greedy cycles** | "
        "greedy pipeline (s) | search pipeline (s) | **time ratio** |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in MODELS:
        flow = flow_snapshot(ROOT / "resources" / "examples" / "single_conv.onnx"
                             if name == "example" else zoo_model(name))
        for target in (default, small):
            g_time, g_cycles = _run(flow, target, search=False)
            s_time, s_cycles = _run(flow, target, search=True)
            lines.append(f"| {name} | {target.name} | {g_cycles:,} | {s_cycles:,} | "
                         f"{s_cycles / g_cycles:.3f} | {g_time:.2f} | {s_time:.2f} | "
                         f"{s_time / g_time:.1f} |")
            print(lines[-1], flush=True)
    write_section("tile-search-bench", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
