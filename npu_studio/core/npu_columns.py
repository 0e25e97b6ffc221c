"""The NPU's columns and detail of a dispatch in the dispatch table, from a planned NPU program (no Qt)."""

from __future__ import annotations

from .npu.program.npu_ir import DispatchInfo, NpuProgram
from .session import NPU_PHASE, NPU_SOURCE
from .units import format_bytes

HEADERS = ("NPU", "reason", "tile", "SRAM")
TABLE_PHASES = (NPU_SOURCE, NPU_PHASE)  # the phases whose table shows the NPU columns


def kib(n: int) -> str:
    return format_bytes(n)


def tile_label(d: DispatchInfo) -> str:
    """`F8 OH66 OW352 C3 KH3 KW3`: tile size per loop ("" for a fallback)."""
    return " ".join(f"{n}{s}" for n, s in zip(d.loop_dims, d.tile_sizes))


def table_values(p: NpuProgram) -> dict[int, tuple[str, str, str, str]]:
    return {d.index: (f"NPU {d.unit}" if d.legal else "CPU", d.reason, tile_label(d),
                      kib(p.dispatch_sram_peak(d.index)) if d.legal else "")
            for d in p.dispatches}


def detail_text(p: NpuProgram, index: int) -> str:
    d = next((x for x in p.dispatches if x.index == index), None)
    if d is None:
        return ""
    tasks = p.tasks_of(index)
    lines = [f"NPU ({p.target.name}): " + (f"{d.kind} -> NPU {d.unit}" if d.legal
                                           else f"CPU fallback: {d.reason} [rule {d.rule}]")]
    if d.acc_dtype:
        lines.append(f"  types: {d.dtype} inputs, {d.acc_dtype} accumulator")
    if d.transposed:
        lines.append(f"  transposed: {', '.join(d.transposed)} (by the {d.transpose_by})")
    if d.transfer:
        pad = f", pad value {d.pad_value}" if d.pad_value else ""
        lines.append(f"  DMA: {d.transfer} transfer DRAM to DRAM{pad}")
    if d.legal and d.unit != "dma":
        dims = " ".join(f"{n}={r}" for n, r in zip(d.loop_dims, d.loop_ranges))
        lines.append(f"  loops: {dims}")
        lines.append(f"  tile: {tile_label(d)} ({d.num_tiles} tiles)")
        lines.append("  loop order: " + " ".join(d.loop_dims[i] for i in d.loop_order))
        lines.append(f"  SRAM: {kib(d.sram_bytes)} double-buffered working set, "
                     f"peak {kib(p.dispatch_sram_peak(index))} of {kib(p.target.sram_bytes)}")
    if tasks:
        lines.append(f"  tasks: {len(tasks)} ({tasks[0].op}, #{tasks[0].id}..#{tasks[-1].id})")
    return "\n".join(lines)
