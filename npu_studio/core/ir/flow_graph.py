"""The host side of a `flow` module: dispatch call sites and dataflow.

Dispatches are numbered #0, #1, ... in program order of their
`flow.dispatch` call sites (host functions walked in order, executables
skipped). Every host tensor value is given a DRAM buffer; reshapes,
bitcasts and barriers alias their operand's buffer. `producers` says
which dispatches a buffer's contents come from (through host ops that
are not dispatches, e.g. `flow.tensor.update`), which gives the
dispatch dataflow graph.

What each dispatch is (executable and export symbols, ONNX provenance,
root op, dimensions) is not worked out here: it is the dispatch index's
record (`dispatch_index`), indexed from the same snapshot, so the dispatch
table and the NPU report cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iree.compiler import ir

from .dispatch_index import DispatchRecord, PhaseIndex, index_text
from .flow_functions import dispatch_functions
from .linalg import dtype_nbytes

ALIASING = {"flow.tensor.reshape", "flow.tensor.bitcast", "hal.tensor.barrier",
            "flow.tensor.transfer", "flow.tensor.tie_shape"}
CONSTANT = {"flow.tensor.splat", "flow.tensor.constant", "arith.constant", "util.global.load"}


@dataclass
class HostBuffer:
    id: str
    shape: tuple[int | None, ...]
    dtype: str
    kind: str  # input | output | weight | constant | intermediate
    producers: frozenset[int] = frozenset()  # dispatches that produced the contents
    first: int | None = None  # first dispatch writing it (None: before the program)
    uses: list[int] = field(default_factory=list)  # dispatches reading it

    @property
    def dynamic(self) -> bool:
        return any(d is None for d in self.shape)

    @property
    def nbytes(self) -> int:
        if self.dynamic:
            return 0
        return math.prod(self.shape) * dtype_nbytes(self.dtype)


@dataclass
class DispatchSite:
    index: int
    op: ir.Operation
    record: DispatchRecord  # the dispatch index's record of this site
    args: list[str | None]  # func argument -> buffer id (None for index args)
    reads: list[str]  # buffer ids of tensor operands
    writes: list[str]  # buffer ids of results
    deps: frozenset[int] = frozenset()  # producer dispatches

    @property
    def executable(self) -> str:
        return self.record.executable or ""

    @property
    def export(self) -> str:
        return self.record.export or ""

    @property
    def location(self) -> str:
        return ",".join(self.record.onnx_nodes)


def tensor_shape_dtype(t: ir.Type) -> tuple[tuple[int | None, ...], str] | None:
    if not isinstance(t, ir.RankedTensorType):
        return None
    shape = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
    return shape, str(t.element_type)


class FlowGraph:
    def __init__(self, module: ir.Operation, index: PhaseIndex | None = None):
        """`index`: the flow-phase dispatch index of the same snapshot (None:
        indexed here from the module's text)."""
        self.module = module
        if index is None:
            index = index_text(module.get_asm(enable_debug_info=True), "flow")
        self.index = index
        self.buffers: dict[str, HostBuffer] = {}
        self.sites: list[DispatchSite] = []
        self.funcs: dict[tuple[str, str], ir.Operation] = dict(dispatch_functions(module))
        self._of_value: dict[ir.Value, str] = {}
        self._globals: dict[str, str] = {}
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "flow.executable":
                self._walk_host(op)
        if len(self.sites) != len(index.dispatches):
            raise ValueError(f"the dispatch index has {len(index.dispatches)} dispatches, "
                             f"the module {len(self.sites)} flow.dispatch sites")

    # -- host ----------------------------------------------------------------
    def _new(self, value: ir.Value, kind: str, producers=frozenset(), first=None) -> str | None:
        sd = tensor_shape_dtype(value.type)
        if sd is None:
            return None
        bid = f"d{len(self.buffers)}"
        self.buffers[bid] = HostBuffer(bid, sd[0], sd[1], kind, frozenset(producers), first)
        self._of_value[value] = bid
        return bid

    def buffer_of(self, value: ir.Value) -> str | None:
        return self._of_value.get(value)

    def _walk_host(self, op: ir.Operation) -> None:
        name = op.name
        if name == "flow.dispatch":
            self._dispatch(op)
        elif name == "hal.tensor.import":
            self._new(op.results[0], "input")
        elif name in ALIASING:
            for i, r in enumerate(op.results):
                src = self.buffer_of(op.operands[i]) if i < len(op.operands) else None
                if src is not None:
                    self._of_value[r] = src
                else:
                    self._new(r, "intermediate")
        elif name == "util.global.load":
            g = str(op.attributes["global"])
            if g in self._globals and op.results:
                self._of_value[op.results[0]] = self._globals[g]
            elif op.results:
                bid = self._new(op.results[0], "weight")
                if bid:
                    self._globals[g] = bid
        elif name in CONSTANT:
            for r in op.results:
                self._new(r, "constant")
        elif name == "hal.tensor.export":
            bid = self.buffer_of(op.operands[0])
            if bid:
                self.buffers[bid].kind = "output"
        else:
            # Other host ops producing tensors (flow.tensor.update, ...):
            # contents come from whatever produced their tensor operands.
            prods: set[int] = set()
            for v in op.operands:
                b = self.buffer_of(v)
                if b:
                    prods |= self.buffers[b].producers
            for r in op.results:
                self._new(r, "intermediate", prods)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    self._walk_host(inner.operation)

    def _dispatch(self, op: ir.Operation) -> None:
        index = len(self.sites)
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        nwork, nargs = seg[0], seg[1]
        arguments = list(op.operands)[nwork:nwork + nargs]
        tied = [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["tied_operands"])] \
            if "tied_operands" in op.attributes else [-1] * len(op.results)
        reads = [b for b in (self.buffer_of(v) for v in arguments) if b]
        deps = frozenset(p for b in reads for p in self.buffers[b].producers)
        for b in reads:
            self.buffers[b].uses.append(index)
        writes, args = [], [self.buffer_of(v) for v in arguments]
        result_of_arg: dict[int, str] = {}
        for j, r in enumerate(op.results):
            bid = self._new(r, "intermediate", {index}, index)
            writes.append(bid)
            if j < len(tied) and tied[j] >= 0:
                result_of_arg[tied[j]] = bid
            else:
                args.append(bid)
        # A tied (read-write) argument is written into the result's buffer.
        args = [result_of_arg.get(i, b) for i, b in enumerate(args)]
        # Both walk the module in pre-order: site i is the index's dispatch i.
        self.sites.append(DispatchSite(index, op, self.index.dispatches[index] if index < len(
            self.index.dispatches) else DispatchRecord(index), args, reads,
            [w for w in writes if w], deps))

    # -- queries -------------------------------------------------------------
    def func_of(self, site: DispatchSite) -> ir.Operation | None:
        return self.funcs.get((site.record.executable, site.record.export))

    def edges(self) -> set[tuple[int, int]]:
        return {(p, s.index) for s in self.sites for p in s.deps}
