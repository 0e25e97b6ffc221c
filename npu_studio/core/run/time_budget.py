"""How long a run may take before it is stopped: derived from its work, with a floor, never unbounded.

One place for every limit on a child process or an NPU plugin call, so a
slow machine and a big model get proportionally more time and a hang is
still caught. The rates are deliberately pessimistic: measured on this
project's models (docs/PERFORMANCE.md, "Time limits"), the functional
simulator computes about 1.4e8 FLOP/s and the plugin's C interpreter
3e8 FLOP/s on one core; the limits assume 10 to 30 times less, for a
loaded machine shared with other jobs. The floors cover process start,
module load and Python imports.
"""

from __future__ import annotations

import math
from pathlib import Path

# One NPU dispatch computed behind the plugin (functional simulator or C interpreter).
NPU_FLOPS = 1e7  # FLOP per second
NPU_BYTES = 1e7  # bytes read and written per second (DMA transfers, elementwise)
NPU_TILE_SECONDS = 0.05  # per tile: the simulator's per-task overhead
NPU_CALL_FLOOR = 30.0

# IREE's CPU code on the whole module (run, dispatch module, per-dispatch check).
IREE_BYTES = 1e6  # bytes of module, parameters and inputs per second
IREE_RUN_FLOOR = 120.0


def npu_call_seconds(flops: int, nbytes: int, tiles: int) -> float:
    """The limit on one plugin call computing a dispatch of this size."""
    return max(NPU_CALL_FLOOR, flops / NPU_FLOPS + nbytes / NPU_BYTES + max(tiles, 1) * NPU_TILE_SECONDS)


def iree_run_seconds(nbytes: int) -> float:
    """The limit on one IREE CPU run over `nbytes` of module, parameters and inputs."""
    return IREE_RUN_FLOOR + nbytes / IREE_BYTES


def file_bytes(*paths: Path | None) -> int:
    """Total size of the files that exist among `paths` (module, parameter archive ...)."""
    total = 0
    for p in paths:
        if p is not None and Path(p).is_file():
            total += Path(p).stat().st_size
    return total


def array_bytes(arrays) -> int:
    return sum(int(getattr(a, "nbytes", 0)) for a in arrays)


def seconds_text(seconds: float) -> str:
    """A limit as people read it: whole seconds (rounded up)."""
    return f"{math.ceil(seconds):d} s"
