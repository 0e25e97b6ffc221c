"""The NPU pipeline of one flow text on many targets (a sweep's points).

`ModelPlanner(text).program(target)` returns what
`run_npu_pipeline(text, target)` returns, without redoing what the target
does not change:

- the module is parsed, cleaned up and legalized once per the target fields
  legality reads (kinds, types, limits, vector functions, DMA abilities,
  output stage): not per SRAM size, array, bandwidth or clock;
- per target only npu-tile runs (the tile search, memoised itself), and when
  every dispatch gets the tiles of a program planned before, that program is
  reused with the new target: the memory plan and the schedule depend on the
  tiles, not on the bandwidth or the clock.

tests/core/npu/test_replan.py checks it against the plain pipeline.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections import OrderedDict

from iree.compiler import ir

from ...ir.context import first_diagnostic, mlir_context
from ...ir.dispatch_index import PhaseIndex, index_text
from ..backend.api import BackendError
from ..target.cost_model import CostModel
from ..program.npu_ir import NpuProgram
from .passes import NpuError, _run_passes, _State
from ..target.target import NpuTarget

_PROGRAMS = 8  # per planner: programs of large models are big


def legality_key(target: NpuTarget) -> NpuTarget:
    """The target as far as npu-legalize reads it (rules.py, legality.py)."""
    return dataclasses.replace(
        target, name="", clock_mhz=1, mac_rows=1, mac_cols=1, dataflow="output-stationary",
        vector_lanes=1, sram_bytes=1, sram_banks=1, dram_bytes_per_cycle=1, dma_channels=1,
        dma_setup_cycles=0, cpu_launch_cycles=0, cpu_ops_per_cycle=1, macs_per_cycle=(),
        cost=CostModel(), source="")


class ModelPlanner:
    """One flow text planned for many targets (not strict: illegal dispatches fall back)."""

    def __init__(self, text: str, index: PhaseIndex | None = None):
        self.text = text
        self.index = index or index_text(text, "flow")
        self._legalized: OrderedDict[NpuTarget, _State] = OrderedDict()
        self._programs: OrderedDict[tuple, NpuProgram] = OrderedDict()
        self._lock = threading.Lock()  # one MLIR module, annotated by each run: one at a time

    def program(self, target: NpuTarget) -> NpuProgram:
        with self._lock:
            base = self._legal_state(target)
            state = _State(target, False, self.index)
            state.graph = base.graph
            state.plans = [copy.copy(p) for p in base.plans]  # npu-tile records its outcome on each
            module = base.program_module
            with module.context:
                self._step(state.tile, module)
                key = (legality_key(target),
                       tuple((p.site.index, p.tiling) for p in state.plans if p.tiling is not None),
                       tuple((p.rule, p.reason) for p in state.plans))
                known = self._programs.get(key)
                if known is not None and known.sram_peak <= target.sram_bytes:
                    self._programs.move_to_end(key)
                    return dataclasses.replace(known, target=target)
                self._step(state.plan_memory, module)
                self._step(state.schedule, module)
            self._programs[key] = state.program
            if len(self._programs) > _PROGRAMS:
                self._programs.popitem(last=False)
            return state.program

    def _legal_state(self, target: NpuTarget) -> _State:
        key = legality_key(target)
        state = self._legalized.get(key)
        if state is None:
            try:
                module = ir.Module.parse(self.text, mlir_context())
            except ir.MLIRError as e:
                line, col, message = first_diagnostic(e)
                raise NpuError(f"cannot parse: {message}", line=line, col=col) from None
            state = _State(target, False, self.index)
            _run_passes(module, state, passes=1)  # cleanup, npu-legalize
            self._legalized[key] = state
            if len(self._legalized) > 2:
                self._legalized.popitem(last=False)
        return state

    @staticmethod
    def _step(fn, module) -> None:
        """One pass outside the pass manager, its errors as run_npu_pipeline gives them."""
        try:
            fn(module.operation)
        except (NpuError, BackendError):
            raise
        except Exception as e:
            raise NpuError(f"{type(e).__name__}: {e}") from e
