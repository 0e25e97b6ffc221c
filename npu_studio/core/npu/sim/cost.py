"""Cycle costs of single steps on an NPU target (pure arithmetic).

MAC array: SCALE-Sim's analytical model of a systolic array. A conv or
matmul tile is the GEMM (M x K) . (K x N) the way SCALE-Sim lowers a
conv: M = output pixels (N*OH*OW), N = filters, K = C*KH*KW. With R x C
processing elements:

  output-stationary: the M x N outputs are folded over the array,
      ceil(M/R) * ceil(N/C) folds of K + R + C - 2 cycles each
      (K operand pairs streamed in, the skew filling R rows and C columns);
  weight-stationary: the K x N weights are folded over the array,
      ceil(K/R) * ceil(N/C) folds of 2R + C + M - 2 cycles each
      (R cycles to load the weights, M input rows streamed with skew).

SCALE-Sim reports one cycle less (it counts the index of the last
cycle); tests/core/npu/sim compares with its own output. Grouped and
depthwise convs run one GEMM per group, batched matmuls one per batch,
as SCALE-Sim does for its depthwise layers.

A target may give a type more MACs per processing element per cycle
(`mac_array.macs_per_cycle`, e.g. 4 for i8): K is then streamed that many
elements a cycle (ceil(K / rate) in the formulas above).

Vector unit: each lane takes an element's functions one after another:
the cycles per element are the sum of the target's `vector.functions`
costs over the ops the dispatch computes (its `vector_cost`: max, sub,
exp, add, div = 1 + 1 + 4 + 1 + 4 for a softmax on the default target).
CPU fallback: a launch overhead plus `cpu_ops_per_cycle`. DMA: a per-transfer setup
latency, then the bytes at the DRAM bandwidth the transfer gets (the
timing engine shares `dram_bytes_per_cycle` between concurrent
transfers). A DRAM-to-DRAM transfer (pad, copy, transpose: one strided
descriptor) moves its bytes twice: read, then written.
"""

from __future__ import annotations

import math

from ..backend.registry import backend_of
from ..target.target import NpuTarget

MAC_KINDS = ("conv", "depthwise_conv", "matmul", "batch_matmul")
# Loop label of the GEMM's N (columns of the result) per op kind; batch-like
# labels run whole GEMMs one after another.
_GEMM_N = {"conv": "F", "depthwise_conv": "F", "matmul": "N", "batch_matmul": "N"}
_GEMM_BATCH = {"conv": ("G",), "depthwise_conv": ("G", "C"), "matmul": ("B",), "batch_matmul": ("B",)}


def gemm_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str) -> int:
    """Compute cycles of one (M x K) . (K x N) product on a rows x cols array."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0
    if dataflow == "weight-stationary":
        return math.ceil(k / rows) * math.ceil(n / cols) * (2 * rows + cols + m - 2)
    return math.ceil(m / rows) * math.ceil(n / cols) * (k + rows + cols - 2)


def gemm_view(kind: str, loop_dims: tuple[str, ...], reductions: tuple[bool, ...],
              sizes: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a tile with `sizes` of a dispatch's loops."""
    n_label = _GEMM_N.get(kind, "N")
    batch_labels = _GEMM_BATCH.get(kind, ())
    batch = m = n = k = 1
    for name, red, size in zip(loop_dims, reductions, sizes):
        if red:
            k *= size
        elif name == n_label:
            n *= size
        elif name in batch_labels:
            batch *= size
        else:
            m *= size
    return batch, m, n, k


def mac_cycles(target: NpuTarget, kind: str, loop_dims: tuple[str, ...],
               reductions: tuple[bool, ...], sizes: tuple[int, ...], dtype: str = "") -> int:
    """MAC-array cycles of one tile whose root op reads `dtype` inputs.

    A processing element doing `rate` MACs per cycle on that type
    (`mac_array.macs_per_cycle`) takes `rate` reduction elements a cycle:
    the GEMM's K shrinks to ceil(K / rate).
    """
    batch, m, n, k = gemm_view(kind, loop_dims, reductions, sizes)
    k = -(-k // target.mac_rate(dtype))
    return batch * gemm_cycles(m, n, k, target.mac_rows, target.mac_cols, target.dataflow)


def tile_compute_cycles(target: NpuTarget, kind: str, loop_dims: tuple[str, ...],
                        reductions: tuple[bool, ...], sizes: tuple[int, ...],
                        vector_cost: int, dtype: str = "") -> int:
    """The compute step of one tile: on the MAC array or the vector unit."""
    if kind in MAC_KINDS:
        return mac_cycles(target, kind, loop_dims, reductions, sizes, dtype)
    return vector_cycles(target, math.prod(sizes), vector_cost or 1)


def tile_cycles_of(target: NpuTarget):
    """The cost hook of one tile's compute step for the target's backend (the model above
    when the backend has none), with `tile_compute_cycles`' arguments."""
    return backend_of(target).tile_cycles or tile_compute_cycles


def vector_cycles(target: NpuTarget, ops: int, cycles_per_element: int = 1) -> int:
    return -(-ops * cycles_per_element // target.vector_lanes)


def cpu_cycles(target: NpuTarget, ops: int) -> int:
    return target.cpu_launch_cycles + -(-ops // target.cpu_ops_per_cycle)


def dma_cycles_alone(target: NpuTarget, nbytes: int) -> int:
    """A transfer that has the DRAM bandwidth to itself."""
    return target.dma_setup_cycles + -(-nbytes // target.dram_bytes_per_cycle)
