"""The generic NPU through the backend API: its rules, the shared cost model and tile
search, the functional simulator as its runner and the executable plugin as its loader.

Registered in pyproject.toml:

    [project.entry-points."npu_studio.backends"]
    generic = "npu_studio.core.npu.generic.backend:make_backend"
"""

from __future__ import annotations

from pathlib import Path

from ..backend.api import GENERIC, Backend, DispatchCall, RunResult, TileRegion
from ..plan.tile_search import best_tiling
from ..sim.cost import tile_compute_cycles
from ..target.target import target_file
from .rules import RULES
from .... import __version__


class TaskOrderRunner:
    """The functional simulator: the dispatch's body computed tile by tile, in task order."""

    def run(self, call: DispatchCall) -> RunResult:
        if not call.tiled:
            call.compute(None)
            return RunResult(tiles=1)
        tiles = [TileRegion(t.tile_offsets, t.tile_sizes) for t in call.program.tasks_of(call.dispatch)]
        call.compute(tiles)
        return RunResult(tiles=len(tiles))


def _plugin() -> Path:
    from ..hal.plugin_build import plugin_path

    return plugin_path()


def make_backend() -> Backend:
    return Backend(
        name=GENERIC, version=__version__, default_target=target_file(None),
        description="the bundled generic NPU (docs/npu-target.md)",
        rules=RULES, tile_cycles=tile_compute_cycles, choose_tiling=best_tiling,
        runner=TaskOrderRunner(), loader=_plugin)
