"""The generic NPU through the backend API: its rules, the shared cost model and tile
search, the functional simulator as its runner and the executable plugin as its loader.

Registered in pyproject.toml:

    [project.entry-points."npu_studio.backends"]
    generic = "npu_studio.core.npu.generic.backend:make_backend"
"""

from __future__ import annotations

from pathlib import Path

from ..backend.api import GENERIC, Backend, DispatchCall, Emitted, EmittedLine, RunResult, TileRegion
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


def emit(program) -> Emitted:
    """The generic NPU's assembly (docs/npu-isa.md) and its binary, each line tagged with its task and dispatch."""
    from ..isa import TEXT_FIRST_LINE, program_assembly
    from ..isa.encoding import disassemble_spans

    assembly = program_assembly(program)
    binary = assembly.binary()
    spans = [span for _ins, span in disassemble_spans(binary)]
    lines = tuple(EmittedLine(TEXT_FIRST_LINE + i, dispatch, task, offset, size)
                  for i, ((dispatch, task), (offset, size)) in enumerate(zip(assembly.tags(), spans))
                  if dispatch is not None)  # program-wide lines (buffers, the final barrier) have no dispatch
    return Emitted(assembly.text(), binary, lines)


def _plugin() -> Path:
    from ..hal.plugin_build import plugin_path

    return plugin_path()


def make_backend() -> Backend:
    return Backend(
        name=GENERIC, version=__version__, default_target=target_file(None),
        description="the bundled generic NPU (docs/npu-target.md)",
        rules=RULES, tile_cycles=tile_compute_cycles, choose_tiling=best_tiling,
        runner=TaskOrderRunner(), loader=_plugin, emit=emit)
