"""Synthetic NPU programs built with the real scheduler and memory planner.

A chain of tiled matmuls (dispatch i reads dispatch i-1's result) of any
size, for the invariant tests and the 100,000-task benchmark, and single
untiled layers (conv, matmul) for the SCALE-Sim comparison.
"""

from __future__ import annotations

import math

from npu_studio.core.npu.plan.memory_plan import Request, allocate
from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram
from npu_studio.core.npu.plan.schedule import DispatchTiles, TiledOperand, build_tasks, task_positions
from npu_studio.core.npu.target.target import NpuTarget
from npu_studio.core.npu.plan.tiling import Access, Loop, access_bytes, tile_counts


def _matmul(m: int, n: int, k: int, eb: int):
    loops = (Loop("M", m), Loop("N", n), Loop("K", k, True))
    a = Access("a", "input", eb, ((((0, 1),), m), (((2, 1),), k)))
    b = Access("b", "weight", eb, ((((2, 1),), k), (((1, 1),), n)))
    c = Access("c", "output", eb, ((((0, 1),), m), (((1, 1),), n)))
    return "matmul", loops, (a, b, c)


def _conv(h: int, w: int, kh: int, kw: int, c: int, f: int, eb: int):
    """Unpadded stride-1 conv on an h x w input (give the padded size)."""
    oh, ow = h - kh + 1, w - kw + 1
    loops = (Loop("F", f), Loop("OH", oh), Loop("OW", ow), Loop("C", c, True),
             Loop("KH", kh, True), Loop("KW", kw, True))
    inp = Access("i", "input", eb, ((((3, 1),), c), (((1, 1), (4, 1)), h), (((2, 1), (5, 1)), w)))
    wgt = Access("w", "weight", eb, ((((0, 1),), f), (((3, 1),), c), (((4, 1),), kh), (((5, 1),), kw)))
    out = Access("o", "output", eb, ((((0, 1),), f), (((1, 1),), oh), (((2, 1),), ow)))
    return "conv", loops, (inp, wgt, out)


def program(layers: list[tuple[str, tuple, tuple[int, ...]]], target: NpuTarget,
            chain: bool = True, eb: int = 4) -> NpuProgram:
    """layers: (kind "matmul"|"conv", shape args, tile sizes per loop)."""
    work, infos, dram, sram_req = [], [], [], []
    deps: dict[int, set[int]] = {}
    prev_out = None
    for i, (kind, args, tile) in enumerate(layers):
        kind, loops, accs = (_matmul if kind == "matmul" else _conv)(*args, eb)
        ops, reads = [], []
        for acc in accs:
            size = math.prod(d for _, d in acc.dims) * eb
            if acc.role == "input" and chain and prev_out is not None:
                src = prev_out
            else:
                src = f"d{i}.{acc.name}"
                dram.append((src, size, "input" if acc.role != "output" else "output"))
            if acc.role != "output":
                reads.append(src)
            ops.append(TiledOperand(acc.name, acc.role, acc, src if acc.role != "output" else None,
                                    (f"s{i}.{acc.name}.0", f"s{i}.{acc.name}.1"), eb))
        out = f"d{i}.{accs[-1].name}"
        if chain and i:
            deps[i] = {i - 1}
        prev_out = out
        work.append(DispatchTiles(i, kind, loops, tile, tuple(range(len(loops))), tuple(ops), (out,)))
        n_tiles = math.prod(tile_counts(loops, tile))
        infos.append(DispatchInfo(
            index=i, symbol=f"synthetic_{i}", location=f"layer{i}", kind=kind, op_name="linalg.generic",
            legal=True, reason="", loop_dims=tuple(lp.name for lp in loops),
            loop_ranges=tuple(lp.size for lp in loops),
            iterator_types=tuple("reduction" if lp.reduction else "parallel" for lp in loops),
            tile_sizes=tile, loop_order=tuple(range(len(loops))), num_tiles=n_tiles,
            sram_bytes=2 * sum(access_bytes(a, tile) for a in accs), inputs=tuple(reads),
            outputs=(out,), deps=tuple(sorted(deps.get(i, ())))))
        sram_req.append([(f"s{i}.{a.name}.{k}", access_bytes(a, tile)) for a in accs for k in (0, 1)])
    tasks = build_tasks(work, deps)
    positions = task_positions([math.prod(tile_counts(w.loops, w.sizes)) for w in work])
    reqs = [Request(bid, size, *positions[i]) for i, slots in enumerate(sram_req) for bid, size in slots]
    offs, sram_peak = allocate(reqs, target.sram_bytes)
    buffers = [Buffer(bid, size, "f32", (), "dram", 0, kind, (0, len(tasks))) for bid, size, kind in dram]
    buffers += [Buffer(r.id, r.size, "f32", (), "sram", offs[r.id], "tile", (r.start, r.end)) for r in reqs]
    return NpuProgram(target, tuple(infos), tuple(buffers), tuple(tasks), sram_peak, 0)


def matmul_chain(n_tasks: int, target: NpuTarget, tiles_per_dispatch: int = 1000) -> NpuProgram:
    """About `n_tasks` tasks: dispatches of 64x64x64 tiles, 10 x 10 x 10 tiles each."""
    side = round(tiles_per_dispatch ** (1 / 3))
    dim = 64 * side
    layers = [("matmul", (dim, dim, dim), (64, 64, 64))] * -(-n_tasks // side ** 3)
    return program(layers, target)
