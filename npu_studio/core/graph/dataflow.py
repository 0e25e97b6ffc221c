"""The host program's dataflow between dispatches, read from a flow snapshot's SSA uses.

Walking the host functions in program order, every tensor value is given the set of
*sources* its contents come from: a dispatch site (its k-th result), a model input
(`hal.tensor.import`) or a parameter (`util.global.load`). A dispatch's results are
sourced by the dispatch itself; any other host op (reshapes, `flow.tensor.update` of a
concatenation, transfers) passes on the union of its tensor operands' sources, so an
edge crosses those ops; a barrier passes each operand on to its own result. Only tensor operands count: an index computed
from a tensor's shape is not data flowing into a dispatch. Splats, empties and
constants are sources of nothing (they hold no model data).

Dispatch sites are numbered in program order, the dispatch index's flow numbering.
Each site also gets a signature: a digest of its executable's text with its own names
blanked, so two builds' dispatches can be told equal or changed (graph/compare).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..ir.dispatch_index.iree_attrs import sym_name, symbol_path
from ..ir.dispatch_index.provenance import onnx_names
from ..ir.mlir_text import parse_module
from ..lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

DISPATCH, INPUT, OUTPUT, PARAMETER = "dispatch", "input", "output", "parameter"
_EXECUTABLES = ("flow.executable", "stream.executable", "hal.executable")
# Ops whose i-th result is their i-th operand: a barrier joining several outputs passes each
# through on its own (a union would feed every output from every joined dispatch).
_ONE_TO_ONE = ("hal.tensor.barrier", "util.optimization_barrier")


@dataclass(frozen=True)
class Tensor:
    name: str  # the SSA name the producer gives it (%12), or the parameter's global
    shape: tuple[int | None, ...]  # None: dynamic
    dtype: str


@dataclass
class Flow:
    """One edge: `source` node id to `target` node id, carrying `tensor`."""

    source: str
    target: str
    tensor: Tensor


@dataclass
class HostDataflow:
    sites: int = 0
    signatures: list[str] = field(default_factory=list)  # per site
    results: list[list[Tensor]] = field(default_factory=list)  # per site
    inputs: list[tuple[str, Tensor]] = field(default_factory=list)  # (label, tensor)
    outputs: list[tuple[str, Tensor]] = field(default_factory=list)
    parameters: dict[str, Tensor] = field(default_factory=dict)  # global symbol -> tensor
    flows: list[Flow] = field(default_factory=list)


def node_id(kind: str, key) -> str:
    return f"{kind}:{key}"


def _tensor(value, name: str) -> Tensor | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    shape = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
    return Tensor(name, shape, str(t.element_type))


def dataflow_of_text(text: str, path: str | Path | None = None) -> HostDataflow:
    """The dataflow of a flow snapshot's text; SnapshotParseError names file:line:col."""
    _ctx, module = parse_module(text, path)
    return dataflow_of_module(module)


def dataflow_of_module(module) -> HostDataflow:
    body = module.operation.regions[0].blocks[0]
    signatures = {}
    for op in body.operations:
        op = op.operation
        if op.name in _EXECUTABLES:
            signatures[sym_name(op)] = _signature(op)
    walk = _Walk(signatures)
    for op in body.operations:
        op = op.operation
        if op.name not in _EXECUTABLES:
            walk.visit(op)
    return walk.out


def _signature(exe) -> str:
    """The executable's text without locations, its own names blanked (they carry dispatch numbers)."""
    text = exe.get_asm(enable_debug_info=False, large_elements_limit=None)
    name = sym_name(exe) or ""
    if name:
        text = text.replace(name, "@")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class _Walk:
    def __init__(self, signatures: dict[str, str]):
        self.out = HostDataflow()
        self.signatures = signatures
        self.sources: dict = {}  # ir.Value -> frozenset of (node id, Tensor)
        self.state = None

    def _name(self, value) -> str:
        return value.get_name(self.state) if self.state is not None else "%?"

    def _of(self, value) -> frozenset:
        return self.sources.get(value, frozenset())

    def _tensor_operands(self, op):
        return [v for v in op.operands if isinstance(v.type, ir.RankedTensorType)]

    def visit(self, op) -> None:
        name = op.name
        if name in ("util.func", "func.func"):
            self.state = ir.AsmState(op)
        if name == "flow.dispatch":
            self._dispatch(op)
        elif name == "hal.tensor.import":
            label = self._label(op, f"input {len(self.out.inputs)}")
            t = _tensor(op.results[0], self._name(op.results[0]))
            if t is not None:
                nid = node_id(INPUT, len(self.out.inputs))
                self.out.inputs.append((label, t))
                self.sources[op.results[0]] = frozenset({(nid, t)})
        elif name == "util.global.load":
            symbol = str(op.attributes["global"]).lstrip("@")
            t = _tensor(op.results[0], "@" + symbol) if len(op.results) else None
            if t is not None:
                self.out.parameters.setdefault(symbol, t)
                self.sources[op.results[0]] = frozenset({(node_id(PARAMETER, symbol), t)})
        elif name == "hal.tensor.export":
            k = len(self.out.outputs)
            value = op.operands[0]
            t = _tensor(value, self._name(value))
            if t is not None:
                self.out.outputs.append((self._label(op, f"output {k}"), t))
                for source, tensor in sorted(self._of(value), key=lambda s: s[0]):
                    self.out.flows.append(Flow(source, node_id(OUTPUT, k), tensor))
        elif name in _ONE_TO_ONE:
            for operand, r in zip(op.operands, op.results):
                if isinstance(r.type, ir.RankedTensorType) and self._of(operand):
                    self.sources[r] = self._of(operand)
        else:
            merged = frozenset().union(*(self._of(v) for v in self._tensor_operands(op)))
            if merged:
                for r in op.results:
                    if isinstance(r.type, ir.RankedTensorType):
                        self.sources[r] = merged
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    self.visit(inner.operation)

    def _label(self, op, default: str) -> str:
        names: list[str] = []
        onnx_names(op.location, names, set())
        return names[0] if names else default

    def _dispatch(self, op) -> None:
        k = self.out.sites
        self.out.sites += 1
        target = node_id(DISPATCH, k)
        seen: set[str] = set()
        for v in self._tensor_operands(op):
            for source, tensor in sorted(self._of(v), key=lambda s: s[0]):
                if source not in seen:  # one edge per producer, whatever it sends
                    seen.add(source)
                    self.out.flows.append(Flow(source, target, tensor))
        results = []
        for r in op.results:
            t = _tensor(r, self._name(r))
            if t is not None:
                results.append(t)
                self.sources[r] = frozenset({(target, t)})
        self.out.results.append(results)
        path = []
        if "entry_points" in op.attributes and len(op.attributes["entry_points"]):
            path = symbol_path(op.attributes["entry_points"][0])
        elif "entry_point" in op.attributes:
            path = symbol_path(op.attributes["entry_point"])
        self.out.signatures.append(self.signatures.get(path[0], "") if path else "")
