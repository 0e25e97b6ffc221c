"""Pairing every dispatch of one flow snapshot with the ONNX model, in execution order.

`FlowPairing(flow_path, records, model)` reads the snapshot once: each
dispatch's result layouts (`ir/result_layout`) and which host buffer each
binding reads (`ir/flow_graph`: model inputs, constants, other dispatches'
results through host reshapes). Then, dispatch by dispatch in execution
order, `pair(index, results)` pairs its results (`onnx_pairing`) and
remembers what each written buffer holds, so a later dispatch that only
moves it (a transpose, a pad, a copy) is paired through it.

Used by the numerics trace, IREE's break, and precision (on a variant's
own flow snapshot).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from ..dtypes import numpy_value_dtype
from ..ir.context import mlir_context
from ..ir.operand_uses import module_first_uses
from ..ir.result_layout import ResultLayout, module_layouts
from ..lazy_import import lazy_module
from .onnx_pairing import DispatchPairer, Pairing, held_by, mark_partial

np = lazy_module("numpy")


class FlowPairing:
    def __init__(self, flow: Path, phase_index, model):
        """`phase_index`: the flow phase's dispatch index of `flow` (with dispatch-creation's ONNX names)."""
        from iree.compiler import ir

        from ..ir.flow_graph import FlowGraph

        records = phase_index.dispatches
        with mlir_context() as ctx:
            module = ir.Module.parse(Path(flow).read_text(encoding="utf-8"), ctx)
            by_function = module_layouts(module.operation)
            first_uses = module_first_uses(module.operation)
            graph = FlowGraph(module.operation, phase_index)
            self.args = [list(site.args) for site in graph.sites]
            self.writes = [list(site.writes) for site in graph.sites]
            kinds = {b: buf.kind for b, buf in graph.buffers.items()}
            self.declared = [[(graph.buffers[w].shape, graph.buffers[w].dtype) for w in site.writes]
                             for site in graph.sites]
            imports = [b for b, buf in graph.buffers.items() if buf.kind == "input"]
            # sites reading constants only (inside an initializer, or from what one stored)
            self.constant = {site.index for site in graph.sites
                             if all(kinds.get(b) in ("weight", "constant") for b in site.reads)}
        self.layouts: dict[int, list[ResultLayout]] = {}
        self.first_uses: dict[int, dict[int, set[str]]] = {}  # dispatch -> argument -> ONNX nodes applied first
        sites = Counter(rec.executable for rec in records)
        for rec in records:
            key = (rec.executable, rec.export)  # a flow export and its function share a name
            if key in by_function:
                self.layouts[rec.index] = by_function[key]
            # an executable several sites share names the first site's nodes in its ops: none of theirs
            self.first_uses[rec.index] = first_uses.get(key, {}) if sites[rec.executable] == 1 else {}
        self.pairer = DispatchPairer(model, records, {i: ls if sites[self._executable(records, i)] == 1 else
                                                         [replace(lay, base_nodes=()) for lay in ls]
                                                         for i, ls in self.layouts.items()})
        self.producers = {r.index: list(r.producers) for r in records}
        self.held: dict[str, Pairing | str] = {}
        for b, kind in kinds.items():
            if kind in ("weight", "constant"):
                self.held[b] = "it is a constant of the build"
        graph_inputs = self.pairer.graph.graph_inputs
        for b, name in zip(imports, graph_inputs):
            self.held[b] = Pairing(name, None)
        self.pairings: dict[int, list[Pairing]] = {}
        self.tensor_shapes: dict = {}
        self.tensor_dtypes: dict = {}

    @staticmethod
    def _executable(records, index: int):
        return next((r.executable for r in records if r.index == index), None)

    @property
    def graph(self):
        return self.pairer.graph

    def nodes(self, index: int) -> list[str]:
        return self.pairer.nodes.get(index, [])

    def wanted(self) -> list[str]:
        """The ONNX tensors onnxruntime must expose."""
        return self.pairer.wanted()

    def set_reference(self, reference: dict, inputs: list | None = None) -> None:
        """The ONNX values (tensor -> array) the pairing's shapes and element types come from."""
        values = dict(reference)
        for name, a in zip(self.graph.graph_inputs, inputs or []):
            values.setdefault(name, a)
        self.tensor_shapes = {n: tuple(np.shape(v)) for n, v in values.items()}
        self.tensor_dtypes = {n: np.asarray(v).dtype for n, v in values.items()}

    def pair(self, index: int, results=None) -> list[Pairing]:
        """Pair dispatch `index`'s `results` (call in execution order); None: its declared result types
        (pairing reads shapes and element types only, never values)."""
        if results is None:
            results = [_Declared(shape, t) for shape, t in self.declared[index]]
        args = self.args[index] if index < len(self.args) else []
        inputs = {i: self.held.get(b, "what it reads is not known") if b is not None else "it is not a tensor"
                  for i, b in enumerate(args)}
        pairings = self.pairer.pair(index, [_shape(r) for r in results], [_dtype(r) for r in results],
                                    self.tensor_shapes, self.tensor_dtypes, inputs, index in self.constant)
        self.pairings[index] = pairings
        for b, p, r in zip(self.writes[index] if index < len(self.writes) else [], pairings, results):
            self.held[b] = held_by(p, _shape(r))
        return pairings

    def partial(self) -> dict[int, int]:
        """Dispatches holding part of an ONNX op -> the dispatch that completes it (after every `pair`).

        Besides `mark_partial`'s evidence (a later dispatch paired with what the earlier one
        computes), a dispatch is partial when a dispatch reading its result applies, first,
        an op located at the very node it is paired with: IREE continues that node there."""
        partial = mark_partial(self.pairings, self.producers, self.pairer.nodes, self.graph)
        writer = {b: i for i, bs in enumerate(self.writes) for b in bs}
        node_of = {(i, j): p.node for i, ps in self.pairings.items() for j, p in enumerate(ps)
                   if p.node is not None and not p.moved}
        for later in sorted(self.pairings):
            for arg, names in self.first_uses.get(later, {}).items():
                buf = self.args[later][arg] if later < len(self.args) and arg < len(self.args[later]) else None
                earlier = writer.get(buf)
                if earlier is None or earlier >= later or earlier in partial:
                    continue
                j = self.writes[earlier].index(buf)
                if node_of.get((earlier, j)) in names:
                    partial[earlier] = max(later, partial.get(later, later))
        return partial



class _Declared:
    """A result known by its type only."""

    def __init__(self, shape, mlir_type: str):
        self.shape = tuple(shape)
        self.dtype = numpy_value_dtype(mlir_type) or np.dtype("float32")


def _shape(result) -> tuple:
    return tuple(result.shape) if isinstance(result, _Declared) else tuple(np.shape(result))


def _dtype(result):
    return result.dtype if isinstance(result, _Declared) else np.asarray(result).dtype
