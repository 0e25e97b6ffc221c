"""Functional simulation of an NPU program: the numbers it computes.

The host program of the `flow` snapshot is interpreted (`host`); each
dispatch is computed the way the NPU program says: a legal dispatch by the
backend's runner (`backend.api.Runner`; the generic NPU's interprets its
linalg ops tile by tile, in the order of its tasks: the compiler's tiling and
loop order); a fallback dispatch by IREE's CPU build
of that dispatch (`iree_dispatches`). With a `DispatchRunner`, every NPU
dispatch is also run by IREE on the same inputs, which gives each
dispatch's own error and so the first dispatch whose result diverges.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from iree.compiler import ir

from ...compile.params import ParameterArchive
from ...ir.context import mlir_context
from ...run.dispatches.host import HostInterpreter, tied_operands
from ...run.dispatches.iree_dispatches import DispatchRunner
from ...run.dispatches.scalar_ops import NotInterpretable, numpy_dtype
from ...run.tolerance import max_error
from ..backend.api import BackendError, DispatchCall
from ..backend.registry import backend_of
from ..program.npu_ir import NpuProgram
from .dispatch_eval import DispatchInterpreter, Tile


@dataclass(frozen=True)
class TileFault:
    """Add `delta` to the output of one tile (task position `tile` within `dispatch`).

    Used to check that a wrong tile is found: the checker must name `dispatch`.
    """

    dispatch: int
    tile: int
    delta: float = 1.0
    hang: bool = False  # instead: the NPU plugin's call for `dispatch` never returns (tests of the time-outs)


@dataclass
class DispatchOutcome:
    index: int
    symbol: str
    computed_by: str  # "npu" (interpreted tile by tile), "iree-cpu", or "interpreter" (whole, on request)
    tiles: int
    seconds: float
    max_error: float | None = None  # vs IREE's result for this dispatch on the same inputs
    scale: float | None = None  # max |IREE result|, the error's yardstick
    dtype: str = ""  # numpy name of the result's element type
    note: str = ""
    cycles: int | None = None  # measured by the backend's runner, when it measures


@dataclass
class SimResult:
    outputs: list[np.ndarray]
    dispatches: list[DispatchOutcome] = field(default_factory=list)
    seconds: float = 0.0
    intermediates: dict[int, list[np.ndarray]] = field(default_factory=dict)


class FunctionalSim:
    def __init__(self, flow_path: Path, program: NpuProgram, params: Path | None = None,
                 runner: DispatchRunner | None = None, fault: TileFault | None = None,
                 keep_intermediates=False, interpret_fallbacks: bool = False,
                 compare: bool = True, stage_rounding: str | None = None,
                 on_tile=None, reductions: dict | None = None):
        self.ctx = mlir_context()
        self.module = ir.Module.parse(Path(flow_path).read_text(encoding="utf-8"), self.ctx)
        self.program = program
        self.archive = ParameterArchive(params) if params is not None else None
        self.runner = runner
        self.fault = fault
        self.stage_rounding = stage_rounding  # overrides the output stage's rounding (tests)
        self.on_tile = on_tile  # (dispatch, tile, output regions) after each tile, to look at
        # executable -> IREE's lowering configs of its reducing ops (cpu_reductions.reduction_configs):
        # float sums then follow IREE's CPU order bit for bit; None: numpy's order (faster).
        self.reductions = reductions
        # True, or a predicate on a dispatch's results: which results `SimResult.intermediates` keeps
        self.keep = keep_intermediates
        self.compare = compare  # run each NPU dispatch on IREE too (with a runner)
        # Also interpret (whole, untiled) what the NPU leaves to the CPU: a self-check of the interpreter.
        self.interpret_fallbacks = interpret_fallbacks
        self._funcs: dict[tuple[str, str], ir.Operation] = {}
        self.result: SimResult | None = None
        self.backend = backend_of(program.target)
        if self.backend.runner is None:
            raise BackendError(self.backend.name, "has no runner: it cannot compute the program's dispatches")
        self.binary = self.backend.emit(program).binary if self.backend.emit else None

    def run(self, function: str, inputs: list[np.ndarray]) -> SimResult:
        start = time.perf_counter()
        self.result = SimResult([])
        with self.ctx:
            host = HostInterpreter(self.module, self.archive, self._dispatch)
            if len(self.program.dispatches) != len(host.graph.sites):
                raise NotInterpretable(f"the NPU program has {len(self.program.dispatches)} dispatches, "
                                       f"the flow snapshot {len(host.graph.sites)}: run the NPU pipeline again")
            self._funcs = host.graph.funcs
            host.initialize()
            outs = host.call(function, [np.asarray(a) for a in inputs])
        self.result.outputs = [np.asarray(o) for o in outs if o is not None]
        self.result.seconds = time.perf_counter() - start
        return self.result

    # -- one dispatch ----------------------------------------------------------
    def _dispatch(self, index: int, site: ir.Operation, args: list) -> list:
        info = self.program.dispatches[index]
        t0 = time.perf_counter()
        tensors = [a for a in args if isinstance(a, np.ndarray)]
        outcome = DispatchOutcome(index, info.symbol, "npu", 0, 0.0)
        results = None
        if info.legal or self.interpret_fallbacks:
            try:
                # a DMA transfer (pad, copy) is one task: the whole body at once
                results = self._run(index, site, args, outcome, tiled=info.unit != "dma") if info.legal \
                    else self._interpret(index, site, args, outcome, tiled=False)
            except NotInterpretable as exc:
                outcome.note = f"not interpreted ({exc}); computed by IREE's CPU build"
        if results is None:
            if self.runner is None:
                raise NotInterpretable(f"dispatch #{index} runs on the CPU and no IREE build was given")
            outcome.computed_by = "iree-cpu"
            results = self.runner.run(index, tensors)
        outcome.seconds = time.perf_counter() - t0
        outcome.dtype = np.asarray(results[0]).dtype.name if results else ""
        if outcome.computed_by != "iree-cpu" and self.runner is not None and self.compare:
            reference = self.runner.run(index, tensors)
            outcome.max_error, outcome.scale = _max_error(results, reference)
        self.result.dispatches.append(outcome)
        if self.keep is True or (callable(self.keep) and self.keep(results)):
            self.result.intermediates[index] = results
        return results

    def _run(self, index: int, site: ir.Operation, args: list, outcome: DispatchOutcome, tiled: bool) -> list:
        """A legal dispatch, computed by the backend's runner on the shared model of its body."""
        bindings, results = _bindings(site, args)
        notes: list[str] = []

        def compute(tiles):
            body = self._body(index, site, tiles, tiled)
            body.run(bindings)
            notes.extend(body.notes)
        run = self.backend.runner.run(DispatchCall(self.program, index, bindings, compute, self.binary, tiled))
        outcome.computed_by, outcome.tiles, outcome.cycles = "npu", run.tiles if tiled else 0, run.cycles
        outcome.note = "; ".join(notes + ([run.note] if run.note else []))
        return results

    def _body(self, index: int, site: ir.Operation, tiles, tiled: bool) -> DispatchInterpreter:
        """The dispatch's body over `tiles` (TileRegions; None: whole), hooks and output stage set."""
        graph_func = self._func_of(site)
        reductions = None if self.reductions is None else self.reductions.get(_executable(site), [])
        if tiles is None or not tiled:
            return DispatchInterpreter(graph_func, reductions=reductions)
        hook = None
        if self.fault is not None and self.fault.dispatch == index:
            def hook(k, regions, f=self.fault):
                if k == f.tile:
                    for r in regions:
                        r += np.asarray(f.delta).astype(r.dtype)
        if self.on_tile is not None and hook is None:
            def hook(k, regions, i=index, look=self.on_tile):
                look(i, k, regions)
        info = self.program.dispatches[index]
        stage = self.program.target.output_stage if info.unit == "mac" else None
        interp = DispatchInterpreter(graph_func, [Tile(t.offsets, t.sizes) for t in tiles], hook, stage,
                                     self.stage_rounding, reductions)
        if tuple(interp.root_ranges()) != tuple(info.loop_ranges):
            raise NotInterpretable(f"root op loops {interp.root_ranges()} differ from the program's {info.loop_ranges}")
        return interp

    def _interpret(self, index: int, site: ir.Operation, args: list, outcome: DispatchOutcome,
                   tiled: bool = False) -> list:
        """A fallback dispatch interpreted whole (`interpret_fallbacks`: a self-check of the interpreter)."""
        outcome.computed_by = "interpreter"
        bindings, results = _bindings(site, args)
        interp = self._body(index, site, None, False)
        interp.run(bindings)
        outcome.note = "; ".join(interp.notes)
        return results

    def _func_of(self, site: ir.Operation) -> ir.Operation:
        entry = str(ir.ArrayAttr(site.attributes["entry_points"])[0])
        func = self._funcs.get(_entry(site))
        if func is None:
            raise NotInterpretable(f"no function for {entry}")
        return func


def _entry(site: ir.Operation) -> tuple[str, str]:
    """(executable, export) the dispatch site calls."""
    entry = str(ir.ArrayAttr(site.attributes["entry_points"])[0])
    exe, export = [p.strip().lstrip("@").strip('"') for p in entry.split("::")]
    return exe, export


def _executable(site: ir.Operation) -> str:
    return _entry(site)[0]


def _bindings(site: ir.Operation, args: list) -> tuple[list, list]:
    """Arrays for the dispatch function's arguments, and the site's result arrays among them."""
    bindings = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    results = []
    for j, (r, tie) in enumerate(zip(site.results, tied_operands(site))):
        if tie >= 0:
            results.append(bindings[tie])
        else:
            t = r.type
            out = np.zeros(tuple(t.shape), numpy_dtype(t.element_type))
            bindings.append(out)
            results.append(out)
    return bindings, results


def _max_error(ours: list[np.ndarray], ref: list[np.ndarray]) -> tuple[float, float]:
    err, scale = 0.0, 0.0
    for a, b in zip(ours, ref):
        e, s = max_error(a, b)
        err, scale = max(err, e), max(scale, s)
    return err, scale
