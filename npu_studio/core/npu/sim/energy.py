"""Energy of a simulated run by component, and the target's area.

Pure arithmetic over a SimResult's step table and the target's cost model
(target/cost_model.py); units are in every field's name. The counting rules
(docs/npu-simulator.md, "Energy and area"):

- DRAM: the bytes each dispatch reads and writes in DRAM (its
  DispatchStats: DMA loads and stores, DRAM-to-DRAM copies, and a CPU
  fallback's inputs and outputs);
- SRAM: a byte a DMA loads is written into SRAM once and read once by
  the compute; a byte a DMA stores was written once by the compute and is
  read once by the DMA. Partial sums between reduction chunks stay in the
  array and are not counted;
- MAC: the multiply-accumulates of the MAC array's compute steps, at the
  energy of the dispatch's element type;
- vector: the element operations of the vector unit's compute steps;
- leakage: the SRAM's leakage power over the run's time.
CPU fallback work is outside the NPU: only its DRAM traffic counts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..program.npu_ir import NpuProgram
from ..target.target import NpuTarget
from .plan import COMPUTE, DMA_IN, DMA_OUT
from .results import SimResult

MIB = 1 << 20
PJ_PER_MW_US = 1000.0  # 1 mW for 1 us is 1 nJ
COMPONENTS = ("dram", "sram", "mac", "vector", "leakage")


@dataclass(frozen=True)
class EnergyReport:
    dram_pj: float
    sram_pj: float
    mac_pj: float
    vector_pj: float
    leakage_pj: float
    dram_read_bytes: int
    dram_written_bytes: int
    sram_read_bytes: int
    sram_written_bytes: int
    macs: int
    vector_ops: int
    time_us: float

    @property
    def total_pj(self) -> float:
        return self.dram_pj + self.sram_pj + self.mac_pj + self.vector_pj + self.leakage_pj

    def by_component(self) -> dict[str, float]:
        """pJ per component, in COMPONENTS order."""
        return {c: getattr(self, f"{c}_pj") for c in COMPONENTS}

    def to_dict(self) -> dict:
        return {**asdict(self), "total_pj": self.total_pj}


@dataclass(frozen=True)
class AreaReport:
    sram_mm2: float
    mac_mm2: float

    @property
    def total_mm2(self) -> float:
        return self.sram_mm2 + self.mac_mm2


def area(target: NpuTarget) -> AreaReport:
    """The SRAM's and the MAC array's area in mm^2 (the technology's area scale applied)."""
    c = target.cost
    return AreaReport(sram_mm2=target.sram_bytes / MIB * c.sram_mm2_per_mib * c.area_scale,
                      mac_mm2=target.mac_rows * target.mac_cols * c.mac_mm2 * c.area_scale)


def energy(program: NpuProgram, result: SimResult, target: NpuTarget | None = None) -> EnergyReport:
    """Energy of `result` (a simulation of `program` on `target`, default the program's)."""
    target = target or program.target
    c = target.cost
    steps = result.steps
    kind, engine, nbytes, ops, task = (np.asarray(col, dtype=np.int64) for col in (
        steps.kind, steps.engine, steps.bytes, steps.ops, steps.task))  # int64 columns: no copy
    dispatch = np.asarray(result.tasks.dispatch, dtype=np.int64)[task] if len(steps) else np.zeros(0, np.int64)
    mac_engine, vector_engine = result.engines.index("mac"), result.engines.index("vector")

    dram_read = sum(d.dram_read for d in result.dispatches)
    dram_written = sum(d.dram_written for d in result.dispatches)
    moved = int(nbytes[(kind == DMA_IN) | (kind == DMA_OUT)].sum())
    on_mac = (kind == COMPUTE) & (engine == mac_engine)
    macs_by_dispatch = np.bincount(dispatch[on_mac], weights=ops[on_mac]) if on_mac.any() else []
    dtype_of = {d.index: d.dtype for d in program.dispatches}
    mac_pj = sum(int(n) * c.mac_energy_pj(dtype_of.get(i, ""))
                 for i, n in enumerate(macs_by_dispatch) if n)
    vector_ops = int(ops[(kind == COMPUTE) & (engine == vector_engine)].sum())
    time_us = result.total_cycles / target.clock_mhz
    s = c.energy_scale
    return EnergyReport(
        dram_pj=(dram_read * c.dram_read_pj_per_byte + dram_written * c.dram_write_pj_per_byte) * s,
        sram_pj=moved * (c.sram_read_pj_per_byte + c.sram_write_pj_per_byte) * s,
        mac_pj=mac_pj * s,
        vector_pj=vector_ops * c.vector_pj_per_op * s,
        leakage_pj=target.sram_bytes / MIB * c.sram_leakage_mw_per_mib * time_us * PJ_PER_MW_US * s,
        dram_read_bytes=dram_read, dram_written_bytes=dram_written,
        sram_read_bytes=moved, sram_written_bytes=moved,
        macs=int(ops[on_mac].sum()), vector_ops=vector_ops, time_us=time_us)
