"""One dispatch as the NPU passes plan it: the facts the rules check, the tiler's outcome, the verdict.

npu-legalize (`legality.analyze`) fills the facts: the unit, types, loops,
accesses or transfer, read from the dispatch and the target. npu-tile
records its outcome (`tiling`, or `tiling_error` when no tile fits). The
rules (`rules.RULES`) read both; `rule` and `reason` name the first that
failed, and the dispatch then falls back to the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir

from ...ir.dispatch_index import DispatchRecord
from ...ir.flow_graph import DispatchSite
from ...ir.linalg import OpDescription
from ...ir.linalg.requant import Requantization
from .access import BoundAccess
from .tiling import Loop, Tiling
from .transfers import Transfer


@dataclass
class DispatchPlan:
    site: DispatchSite
    # -- facts (npu-legalize) --
    kind: str = "none"  # the dispatch index's kind: the root op's, or the data it moves ("none": neither)
    unit: str = "cpu"  # mac | vector | dma | cpu
    op_name: str = ""
    desc: OpDescription | None = None
    root_op: ir.Operation | None = None
    fused_ops: list[ir.Operation] = field(default_factory=list)
    fused_kinds: list[tuple[str, str]] = field(default_factory=list)  # (label, kind)
    loops: tuple[Loop, ...] = ()
    accesses: list[BoundAccess] | None = field(default_factory=list)
    consts: list[ir.Operation] = field(default_factory=list)
    transfer: Transfer | None = None
    acc_dtype: str = ""  # accumulator of a MAC op
    root_input_dtypes: tuple[str, ...] = ()
    transposed: tuple[str, ...] = ()  # MAC operands read transposed ("input 1")
    vector_ops: tuple[str, ...] = ()  # body ops the vector unit computes
    vector_cost: int = 0  # cycles per element for those, on this target
    requant: list[Requantization] = field(default_factory=list)  # epilogue chains the output stage takes
    stage_note: str = ""  # why the output stage left part of the epilogue to the vector unit
    epilogue: str = ""  # the fused ops of a MAC op in words (output stage; vector functions)
    input_shapes: list[tuple] = field(default_factory=list)
    output_shapes: list[tuple] = field(default_factory=list)
    all_shapes: list[tuple[str, tuple]] = field(default_factory=list)  # host buffers, root op
    root_shapes: list[tuple[str, tuple]] = field(default_factory=list)  # what the NPU computes on
    dtypes_used: list[tuple[str, str]] = field(default_factory=list)
    grouped: bool = False
    unmapped: str = ""  # what a CPU-only dispatch holds
    # -- the tiler's outcome (npu-tile) --
    tiling: Tiling | None = None
    tiling_error: str = ""  # why no tile fits ("" when tiled or not tiled yet); rule sram-fit reads it
    # -- the verdict --
    rule: str = ""  # id of the rule that failed ("" when legal)
    reason: str = ""

    @property
    def legal(self) -> bool:
        return not self.reason

    @property
    def record(self) -> DispatchRecord:
        return self.site.record

    @property
    def flops(self) -> int:
        return sum(d.flops or 0 for d in self.record.ops)
