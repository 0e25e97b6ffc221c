"""Per-dispatch CSV (like Vela's per-layer table) and the text summary.

The CSV header names each column's unit, e.g. `start (cycles)`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ...textio import write_output
from ..program.npu_ir import NpuProgram
from .results import SimResult

CSV_COLUMNS = (
    "dispatch", "kind", "location", "engine", "start (cycles)", "end (cycles)", "cycles",
    "time (us)", "MAC cycles", "MAC utilization (%)", "DRAM read (bytes)", "DRAM written (bytes)",
    "SRAM peak (bytes)", "bound",
)


def dispatch_rows(program: NpuProgram, result: SimResult) -> list[list]:
    infos = {d.index: d for d in program.dispatches}
    rows = []
    for d in result.dispatches:
        info = infos[d.index]
        rows.append([
            d.index, info.kind, info.location, "NPU" if info.legal else "CPU", d.start, d.end,
            d.cycles, round(d.cycles / result.clock_mhz, 3), d.mac_cycles,
            round(100 * d.mac_utilization, 2), d.dram_read, d.dram_written, d.sram_peak, d.bound,
        ])
    return rows


def csv_text(program: NpuProgram, result: SimResult) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    w.writerows(dispatch_rows(program, result))
    return out.getvalue()


def write_csv(program: NpuProgram, result: SimResult, path: str | Path) -> None:
    write_output(path, csv_text(program, result))


def format_energy(pj: float) -> str:
    """`12.5 pJ`, `3.40 nJ`, `1.20 uJ`, `5.00 mJ`."""
    for unit, scale in (("pJ", 1.0), ("nJ", 1e3), ("uJ", 1e6), ("mJ", 1e9)):
        if abs(pj) < 1000 * scale or unit == "mJ":
            return f"{pj / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def energy_lines(program: NpuProgram, result: SimResult, target=None) -> list[str]:
    """Energy by component and the target's area (sim/energy.py)."""
    from .energy import area, energy

    target = target or program.target
    e, a = energy(program, result, target), area(target)
    parts = ", ".join(f"{name} {format_energy(pj)}" for name, pj in (
        ("DRAM", e.dram_pj), ("SRAM", e.sram_pj), ("MAC", e.mac_pj), ("vector", e.vector_pj),
        ("leakage", e.leakage_pj)))
    return [f"energy {format_energy(e.total_pj)}: {parts}",
            f"area {a.total_mm2:.3g} mm^2: SRAM {a.sram_mm2:.3g} mm^2, MAC array {a.mac_mm2:.3g} mm^2"]


def summary(program: NpuProgram, result: SimResult, target=None) -> str:
    """What `npu-studio simulate` prints (`target`: the one simulated, default the program's)."""
    lines = [
        f"{len(program.tasks)} tasks, {len(result.steps)} steps on {result.target} "
        f"({result.clock_mhz} MHz): {result.total_cycles} cycles = {result.time_us:.3f} us",
        "utilization: " + ", ".join(
            f"{name} {100 * result.utilization(name):.1f}%" for name in result.engines),
        f"overlap (cycles): DMA only {result.overlap.dma_only}, compute only "
        f"{result.overlap.compute_only}, both {result.overlap.both}, idle {result.overlap.idle}",
        f"SRAM peak {result.sram_peak} of {result.sram_capacity} bytes; critical path "
        f"{len(result.critical_path)} tasks",
        *energy_lines(program, result, target),
        "",
    ]
    infos = {d.index: d for d in program.dispatches}
    for d in result.dispatches:
        info = infos[d.index]
        lines.append(
            f"Dispatch #{d.index} {info.kind:<14} {d.cycles:>10} cycles  "
            f"MAC {100 * d.mac_utilization:5.1f}%  read {d.dram_read} B  "
            f"written {d.dram_written} B  {d.bound}-bound")
    return "\n".join(lines) + "\n"
