"""What a backend plugin provides: the parts of the NPU model that differ between NPUs.

A backend is one `Backend` value, returned by the callable its package
registers in the `npu_studio.backends` entry point group:

    [project.entry-points."npu_studio.backends"]
    toy = "toy_npu.backend:make_backend"

Everything else (reading the flow module, the facts of each dispatch, the
memory plan, the schedule, the timing engine, the functional simulator,
`run --npu`) is shared. Hooks left as None use the shared ones. Every hook
is called through `registry.guarded`, so a backend that raises is one line
naming the backend and the hook. docs/npu-backends.md is the user's guide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from ...errors import StudioError
from ..program.npu_ir import NpuProgram
from ..target.target import NpuTarget, TargetKey
from .rules import RuleSet

GENERIC = "generic"  # the bundled NPU's backend name, the default everywhere


class BackendError(StudioError):
    """A backend is missing, cannot be loaded, or raised in a hook: one line naming it."""

    def __init__(self, name: str, reason: str):
        super().__init__(None, f"NPU backend {name!r}: {reason}")
        self.backend, self.backend_reason = name, reason

    def __reduce__(self):  # crosses process pools (sweeps) intact
        return (type(self), (self.backend, self.backend_reason))


class NoTileFits(ValueError):
    """Raised by a tiling hook when no tile fits the SRAM (the `sram-fit` fallback, not a fault)."""


# -- the emitter's output ----------------------------------------------------------
@dataclass(frozen=True)
class EmittedLine:
    """Where one instruction of the assembly comes from."""

    line: int  # 1-based line of the assembly text
    dispatch: int  # the dispatch's index in the program
    task: int | None  # the task id, None for a dispatch-wide line (a label, a barrier)
    offset: int = 0  # byte offset of its encoding in `Emitted.binary`
    size: int = 0  # bytes of its encoding


@dataclass(frozen=True)
class Emitted:
    """A program in the backend's own output format."""

    assembly: str  # human-readable instruction text
    binary: bytes  # what the backend's runtime loads
    lines: tuple[EmittedLine, ...] = ()  # one per instruction line, in line order

    def lines_of(self, dispatch: int) -> tuple[EmittedLine, ...]:
        return tuple(ln for ln in self.lines if ln.dispatch == dispatch)


# -- the runner ---------------------------------------------------------------------
@dataclass(frozen=True)
class TileRegion:
    """One tile of a dispatch's root op: its loop offsets and sizes."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]


@dataclass
class DispatchCall:
    """One NPU dispatch handed to a runner.

    `arrays` are the dispatch's bindings (operands, then results) as the
    caller holds them: the runner writes the results in place. `compute`
    is the shared reference model of the dispatch's body: given tiles (None:
    the whole body at once) it computes them into `arrays` in that order; a
    runner driving real hardware ignores it, a model runner may use it for
    the arithmetic and decide the tiles itself (from its binary).
    """

    program: NpuProgram
    dispatch: int
    arrays: list[Any]  # numpy arrays
    compute: Callable[[list[TileRegion] | None], None]
    binary: bytes | None = None  # the emitter's output for the whole program (None: no emitter)
    tiled: bool = True  # False for a DMA transfer: one task, the whole body


@dataclass(frozen=True)
class RunResult:
    tiles: int  # tiles (or instructions) executed
    cycles: int | None = None  # measured by the runner; None when it does not measure
    note: str = ""


class Runner(Protocol):
    def run(self, call: DispatchCall) -> RunResult: ...


# -- hooks ---------------------------------------------------------------------------
# (target, kind, loop_dims, reductions, tile sizes, vector_cost, input dtype) -> cycles of
# one tile's compute step on the MAC array or vector unit (DMA and CPU steps are shared).
TileCycles = Callable[[NpuTarget, str, tuple, tuple, tuple, int, str], int]
# (plan.tiling.TilingProblem, target, dispatch_of) -> plan.tiling.Tiling; raises NoTileFits.
# dispatch_of(tiling) gives the dispatch's tasks and what the simulator reads, to time a candidate.
ChooseTiling = Callable[[Any, NpuTarget, Callable], Any]


@dataclass(frozen=True)
class Backend:
    """One NPU, as the rest of NPU Studio sees it.

    name, version     shown by `npu-studio backends`, recorded in the workspace
    default_target    the target TOML used when the user gives none
    target_keys       the backend's own TOML keys (`toy.max_channels`), checked with the
                      shared ones: unknown, missing or bad keys are `file:line: key: reason`;
                      their values are in `NpuTarget.backend_value(key)`
    rules             legality rules (`RuleSet`); the supported-ops document follows them
    tile_cycles       cost of one tile's compute step (None: the shared SCALE-Sim model)
    choose_tiling     tile sizes and loop order of a dispatch (None: the shared tile search)
    emit              program -> Emitted (optional)
    runner            executes NPU dispatches for `simulate --check` and `run --npu` (None:
                      the backend cannot run programs; those commands say so)
    loader            the executable plugin IREE's runtime loads for `run --npu --standalone`
                      (a callable giving its path; None: the backend has none)
    """

    name: str
    version: str
    default_target: Path
    rules: RuleSet
    description: str = ""
    target_keys: tuple[TargetKey, ...] = ()
    tile_cycles: TileCycles | None = None
    choose_tiling: ChooseTiling | None = None
    emit: Callable[[NpuProgram], Emitted] | None = None
    runner: Runner | None = None
    loader: Callable[[], Path] | None = None
    extra: dict = field(default_factory=dict, compare=False)  # anything else the backend keeps
