"""The generic NPU's legality rules: one rule, one text, one check.

Each rule is a small function whose docstring is the constraint's text; it
returns None when the dispatch passes and the offending value when it does
not. A fallback names the rule and the value:

    Dispatch #7 not supported: dynamic shape (dim 0 of input 0 is ?)

`docs/npu-supported-ops.md` is generated from these rules and the bundled
default target (`report/supported_ops.py`), so the document cannot drift from
the checks. Rules run in the order of `RULES`; the first failure decides.
Another backend may start from these (`RULES.extended(...)`) or write its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backend.rules import RuleSet
from ..plan.op_kinds import function_of
from ..target.target import NpuTarget

if TYPE_CHECKING:
    from ..plan.dispatch_plan import DispatchPlan

RULES = RuleSet()
rule = RULES.rule


# -- the rules, in checking order ------------------------------------------------
@rule("mapping", "no NPU mapping", units=("cpu",))
def _mapping(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """A dispatch needs a root op the MAC array or the vector unit computes, or
    must only move data (a DMA transfer)."""
    return plan.unmapped or "no linalg op and not a plain data transfer"


@rule("static-shape", "dynamic shape")
def _static_shape(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """Every tensor the dispatch reads or writes has a static shape."""
    for where, shape in plan.all_shapes:
        for j, d in enumerate(shape):
            if d is None:
                return f"dim {j} of {where} is ?"
    return None


@rule("op-kind", "op kind not supported", units=("mac", "vector", "dma"))
def _op_kind(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """The root op's kind and every fused op's kind are in `ops.supported`
    (a dispatch without a compute op that only moves data has none). A gather is an elementwise
    op whose read is indexed: `elementwise` covers it."""
    if plan.desc is not None and plan.kind != "other" and _as_supported(plan.kind) not in t.op_kinds:
        return plan.kind
    for label, kind in plan.fused_kinds:
        if _as_supported(kind) not in t.op_kinds:
            return f"{kind} (fused {label})"
    return None


def _as_supported(kind: str) -> str:
    return "elementwise" if kind == "gather" else kind


@rule("dtype", "element type not supported", units=("mac", "vector", "dma"))
def _dtype(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """Every tensor the dispatch reads or writes, and every input of its root
    op, has an element type in `dtypes.supported`. A MAC op or a reduction
    may also read and write an accumulator type (`dtypes.accumulators`:
    an i32 bias or zero-point correction its epilogue adds, an i32 result);
    its root op's inputs may not."""
    acc_ok = plan.unit == "mac" or plan.kind == "reduction"
    for where, dtype in plan.dtypes_used:
        if acc_ok and not where.startswith("root") and dtype in t.acc_dtypes \
                and dtype not in plan.root_input_dtypes:  # read by the epilogue, not the MACs
            continue
        if dtype not in t.dtypes:
            return f"{dtype} in {where}{_part(plan, where, dtype)}"
    return None


def _part(plan: "DispatchPlan", where: str, dtype: str) -> str:
    """Which part of a MAC dispatch a tensor belongs to, for the reason."""
    if plan.unit != "mac" or where.startswith("root"):
        return ""
    if where.startswith("output"):
        return ", the accumulator written back" if dtype == plan.acc_dtype else ", the epilogue's result"
    return "" if dtype in plan.root_input_dtypes else ", read by the epilogue"


@rule("accumulator", "accumulator type not supported", units=("mac",))
def _accumulator(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """A convolution or contraction accumulates in a type from `dtypes.supported`
    or `dtypes.accumulators` (f16 x f16 -> f32, i8 x i8 -> i32)."""
    if plan.acc_dtype and plan.acc_dtype not in t.dtypes and plan.acc_dtype not in t.acc_dtypes:
        return f"{plan.acc_dtype} accumulator of {'x'.join(plan.root_input_dtypes)} inputs"
    return None


@rule("rank", "rank exceeds limits.max_rank", units=("mac", "vector"))
def _rank(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """No tensor of the root op has more dimensions than `limits.max_rank`; a
    grouped convolution's group dimension does not count (each group is one
    conv)."""
    for where, shape in plan.root_shapes:
        rank = len(shape) - (1 if plan.grouped and len(shape) > 1 else 0)
        if rank > t.max_rank:
            return f"{rank} > {t.max_rank}, {where} {'x'.join(map(str, shape))}"
    return None


@rule("dim-size", "dimension exceeds limits.max_dim_size", units=("mac", "vector"))
def _dim_size(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """No dimension of a root op tensor is larger than `limits.max_dim_size`
    (DRAM buffers and DMA transfers are not limited)."""
    for where, shape in plan.root_shapes:
        for j, d in enumerate(shape):
            if d is not None and d > t.max_dim_size:
                return f"{d} > {t.max_dim_size}, dim {j} of {where}"
    return None


@rule("vector-function", "vector function not in the target", units=("mac", "vector"))
def _vector_function(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """Every function in the body of a vector-unit op (and of every op fused
    after a MAC op that the output stage does not take: `[output_stage]`)
    is in `vector.functions`; int <-> float casts count (`itof`, `ftoi`)."""
    for op_name in plan.vector_ops:
        if t.function_cost(function_of(op_name)) is None:
            where = f" in the epilogue ({plan.stage_note})" if plan.unit == "mac" and plan.stage_note else \
                " in the epilogue" if plan.unit == "mac" else ""
            return f"{function_of(op_name)} for {op_name}{where}"
    return None


@rule("transpose", "transposed operand not supported", units=("mac",))
def _transpose(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """A contraction operand read transposed needs `mac_array.transpose` = dma
    (strided DMA loads it transposed) or array."""
    if plan.transposed and t.transpose_by == "none":
        return ", ".join(plan.transposed) + " transposed"
    return None


@rule("dma-strided", "strided transfer not supported", units=("dma",))
def _dma_strided(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """A transpose, slice, broadcast or store into part of a larger tensor needs
    strided DMA descriptors (`dma.strided` = true)."""
    if plan.transfer is not None and plan.transfer.strided and not t.dma_strided:
        return f"{plan.transfer.kind} of {plan.transfer.bytes_read} bytes"
    return None


@rule("dma-padded", "padded transfer not supported", units=("dma",))
def _dma_padded(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """A pad (data stored into a tensor the host filled with a splat value) needs
    a DMA that writes the pad value (`dma.padded` = true)."""
    if plan.transfer is not None and plan.transfer.padded and not t.dma_padded:
        return f"pad value {plan.transfer.pad_value}"
    return None


@rule("indexing-maps", "no indexing maps to tile by", units=("mac", "vector"))
def _indexing_maps(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """The root op has indexing maps (the tiles are cut along them)."""
    return None if plan.accesses is not None else plan.op_name


@rule("sram-fit", "does not fit in SRAM", units=("mac", "vector"), pass_="npu-tile")
def _sram_fit(plan: "DispatchPlan", t: NpuTarget) -> str | None:
    """The smallest tile's working set, double-buffered, fits in `sram.size_kib`
    (checked when tiling)."""
    return None if plan.tiling is not None else plan.tiling_error
