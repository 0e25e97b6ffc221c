"""Which ONNX tensor a dispatch's result holds, and in what layout: comparing like with like.

A result is compared with an ONNX tensor only when they are provably the
same values: the same numbers (shape and element order) in the same numeric
domain. The proof has two halves, neither read from values:

- IREE's side (`ir/result_layout`): from the store back to the last op
  that computes, the ops that only move data (reshapes, transposes, copies
  with permuted maps, slices, pads) are the exact steps from that op's
  value (its *base*) to the result. A dispatch that computes nothing (a
  transpose, a pad, a copy) has one of its inputs as its base.
- ONNX's side (`onnx_graph`): the base is the output of one of the nodes
  the dispatch computes (its root op's nodes and the non-contractions they
  feed), in the tensor's own layout or moved by the graph's own Transpose
  and Reshape nodes after it (or, for an elementwise node, before it).

The base is paired with the last of those nodes in graph order that has a
form of the base's shape (the same dims, or the same dims merged or split
in order) and of the result's domain: an integer result only with an
integer tensor of its width (an int8 dispatch with the QuantizeLinear
output, never the dequantized float), a float result only with a float
tensor. When that node's forms of the right shape hold different element
orders, nothing is paired ("no ONNX counterpart: ..."). A result IREE
writes only in part (into a padded buffer the host filled) is compared
where the dispatch wrote it. Every result left unpaired says why.

A dispatch that moves an input is paired through that input: with the
tensor its producer was paired with (or the model input it reads), moved
by both sides' steps. Dispatches that hold part of an ONNX op (IREE splits
a LayerNorm or a Softmax) are found afterwards (`mark_partial`): the first
is "partial", compared at the dispatch that completes the op.

API (used by the trace, the break, precision and the NPU check):
`DispatchPairer(model, records, layouts)`; `.wanted()` the tensors
onnxruntime must expose; `.pair(index, shapes, dtypes, tensor_shapes,
tensor_dtypes, inputs=...)` one `Pairing` per result; `Pairing.view(result,
reference)` the two arrays to compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..ir.result_layout import ResultLayout, Step, apply_steps, element_order
from ..lazy_import import lazy_module
from .onnx_graph import CONTRACTIONS, OnnxGraphOrder

np = lazy_module("numpy")

__all__ = ["CONTRACTIONS", "DispatchPairer", "OnnxGraphOrder", "Pairing", "dispatch_nodes", "mark_partial"]


@dataclass(frozen=True)
class Pairing:
    tensor: str | None  # the ONNX tensor the reference is made from
    node: str | None  # the node that outputs it
    why_not: str = ""  # when `tensor` is None: why no tensor was paired
    steps: tuple[Step, ...] = ()  # from the ONNX tensor to the part of the result the dispatch wrote
    window: tuple[tuple[int, ...], tuple[int, ...]] | None = None  # (starts, sizes) the dispatch wrote
    via: str = ""  # how the reference is moved, in words ("" when it is the tensor as it is)
    moved: bool = False  # the dispatch only moves data it reads (it computes no ONNX node)
    step: float | None = None  # the tensor is dequantized: one quantization step (run/tolerance)

    @property
    def padded(self) -> bool:
        return self.window is not None

    def view(self, result, reference):
        """(the part of `result` the dispatch wrote, `reference` moved into its layout)."""
        mine = np.asarray(result)
        if self.window is not None:
            starts, sizes = self.window
            mine = mine[tuple(slice(b, b + n) for b, n in zip(starts, sizes))]  # the binding's rank
        ref = apply_steps(np.asarray(reference), self.steps)
        if mine.dtype.kind in "iu" and ref.dtype.kind in "iu" and mine.dtype != ref.dtype \
                and mine.dtype.itemsize == ref.dtype.itemsize:
            mine = mine.view(ref.dtype)  # IREE's integers are signless: a uint8 tensor travels as i8
        return mine, ref.reshape(mine.shape)


def _squeezed(shape) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _prefixes(shape) -> set[int]:
    out, p = set(), 1
    for d in shape:
        p *= d
        out.add(p)
    return out


def same_order_shapes(a, b) -> bool:
    """Are `a` and `b` the same dims, or the same dims merged or split in order (a collapse or an expand)?"""
    if math.prod(a) != math.prod(b):
        return False
    sa, sb = _squeezed(a), _squeezed(b)
    if sa == sb:
        return True
    pa, pb = _prefixes(sa), _prefixes(sb)
    return pa <= pb or pb <= pa


def same_domain(result_dtype, tensor_dtype) -> bool:
    """Do the result's and the tensor's element types hold the same kind of numbers?"""
    a, b = np.dtype(result_dtype), np.dtype(tensor_dtype)
    if a.kind == "f" or b.kind == "f":
        return a.kind == b.kind == "f"
    if a.kind == "b" or b.kind == "b":
        return a.kind == b.kind
    return a.kind in "iu" and b.kind in "iu" and a.itemsize == b.itemsize  # IREE's integers are signless


def dispatch_nodes(rec, graph: OnnxGraphOrder) -> list[str]:
    """The ONNX nodes a dispatch record computes: its root's nodes and the non-contractions they feed."""
    if rec is None:
        return []
    return graph.computed_by(list(rec.onnx_nodes), list(rec.root_onnx_nodes))


def _shape_text(shape) -> str:
    return "x".join(map(str, shape)) or "scalar"


class DispatchPairer:
    """Pairs each result of a flow program's dispatches with an ONNX tensor (see the module's docstring)."""

    def __init__(self, model, records, layouts: dict[int, list[ResultLayout]]):
        self.graph = OnnxGraphOrder(model)
        self.records = {r.index: r for r in records}
        self.layouts = layouts
        self.nodes = {i: dispatch_nodes(r, self.graph) for i, r in self.records.items()}
        for i, r in self.records.items():  # a result made at a node its root does not feed (a gather
            for layout in layouts.get(i, []):  # yielded beside the multiply it feeds) is computed too
                self.nodes[i] += [n for n in layout.base_nodes if n in r.onnx_nodes and n not in self.nodes[i]]

    def wanted(self) -> list[str]:
        """The ONNX tensors the pairings may need (to expose from onnxruntime)."""
        return list(dict.fromkeys(t for nodes in self.nodes.values() for t in self.graph.tensors(nodes)))

    def pair(self, index: int, shapes, dtypes, tensor_shapes: dict, tensor_dtypes: dict,
             inputs: dict[int, Pairing | str] | None = None, constant: bool = False) -> list[Pairing]:
        """One pairing per result of dispatch `index` (`shapes`, `dtypes`: its results').

        `tensor_shapes`/`tensor_dtypes`: of the ONNX tensors onnxruntime gave. `inputs`: for
        each binding of the dispatch, what it holds (a `Pairing` whose steps lead to the
        binding's whole shape) or why that is not known; only a dispatch that moves an input
        needs it. `constant`: the dispatch reads constants only (one inside an initializer):
        it pairs only with a tensor no model input reaches.
        """
        layouts = self.layouts.get(index)
        if layouts is None or len(layouts) != len(shapes):
            why = "its body was not read" if layouts is None else \
                f"its body stores {len(layouts)} results, the run gave {len(shapes)}"
            return [Pairing(None, None, f"no ONNX counterpart: {why}")] * len(shapes)
        taken: set[str] = set()
        out = []
        for layout, shape, dtype in zip(layouts, shapes, dtypes):
            skip = taken | (self.graph.varying() if constant else set())
            p = self._pair_one(index, layout, tuple(shape), dtype, tensor_shapes, tensor_dtypes, inputs or {},
                               skip)
            if p.node in self.graph.step:
                p = replace(p, step=self.graph.step[p.node])
            if constant and p.tensor is None and layout.base != "input":
                p = replace(p, why_not="no ONNX counterpart: it computes a constant of the build (it reads "
                                       "constants only), and no tensor of its nodes is a constant of the model")
            if p.tensor is not None:
                taken.add(p.tensor)
            out.append(p)
        return out

    def _pair_one(self, index, layout: ResultLayout, shape, dtype, tensor_shapes, tensor_dtypes, inputs,
                  taken) -> Pairing:
        if layout.why_unknown:
            return Pairing(None, None, f"no ONNX counterpart: {layout.why_unknown}")
        if layout.base == "input":
            return self._moved(layout, dtype, inputs)
        nodes = self.nodes.get(index, [])
        if not nodes:
            return Pairing(None, None, "no ONNX counterpart: its locations name no ONNX node it computes")
        # the nodes the computing op itself is located at, when it names some: a node after it in the
        # dispatch (a transpose of its result) is one of the layout's steps, not its value
        at_base = [n for n in nodes if n in layout.base_nodes] or nodes
        # a Transpose the dispatch computes apart from that op (its layout transposes after it) is in the
        # layout's steps already: its forms would move the values twice
        own_moves = {n for n in nodes if n not in at_base and self.graph.op_type.get(n) == "Transpose"} \
            if any(s.kind == "transpose" for s in layout.steps) else set()
        base = tuple(layout.base_shape)
        for node in self.graph.latest_first(at_base):
            for tensor in self.graph.outputs[node]:
                if tensor in taken or tensor not in tensor_shapes:
                    continue
                if not same_domain(dtype, tensor_dtypes[tensor]):
                    continue
                fits = [f for f in self.graph.forms(node, tensor, tensor_shapes)
                        if same_order_shapes(f.shape, base) and not own_moves & set(f.movers)]
                if not fits:
                    continue
                orders = {element_order(tensor_shapes[tensor], (*f.steps, Step("reshape", base))).tobytes()
                          for f in fits}
                if len(orders) > 1:
                    return Pairing(None, None, f"no ONNX counterpart: {tensor} ({node}) fits its "
                                               f"{_shape_text(base)} result in {len(orders)} element orders ("
                                               + "; ".join(f.via or "as it is" for f in fits[:3]) + ")")
                form = min(fits, key=lambda f: len(f.steps))
                return Pairing(tensor, node, "", (*form.steps, Step("reshape", base), *layout.steps),
                               layout.window, _via(form.via, layout.steps))
        if layout.window is not None:
            found = self._window_of(nodes, layout, shape, dtype, tensor_shapes, tensor_dtypes, taken)
            if found is not None:
                return found
        domain = np.dtype(dtype).name
        return Pairing(None, None, f"no ONNX counterpart: no {domain}-domain output of "
                                   f"{', '.join(self.graph.latest_first(nodes)[:3])} (nor a known transpose or "
                                   f"reshape of it) has the shape {_shape_text(base)} it computes")

    def _window_of(self, nodes, layout: ResultLayout, whole, dtype, tensor_shapes, tensor_dtypes, taken):
        """A part the dispatch computes into a buffer of a node's output shape (one piece of a Pad
        IREE assembles from several dispatches): paired with that part of the node's output."""
        starts, sizes = layout.window
        for node in self.graph.latest_first(nodes):
            for tensor in self.graph.outputs[node]:
                if tensor in taken or tensor not in tensor_shapes or not same_domain(dtype, tensor_dtypes[tensor]):
                    continue
                fits = [f for f in self.graph.forms(node, tensor, tensor_shapes) if same_order_shapes(f.shape, whole)]
                if len({element_order(tensor_shapes[tensor], (*f.steps, Step("reshape", whole))).tobytes()
                        for f in fits}) != 1:
                    continue
                form = min(fits, key=lambda f: len(f.steps))
                part = Step("slice", tuple(sizes), starts=tuple(starts), strides=tuple(1 for _ in sizes))
                return Pairing(tensor, node, "", (*form.steps, Step("reshape", whole), part), layout.window,
                               "; ".join(v for v in (form.via, "the part it writes: " + part.text()) if v))
        return None

    def _moved(self, layout: ResultLayout, dtype, inputs) -> Pairing:
        held = inputs.get(layout.binding)
        if not isinstance(held, Pairing) or held.tensor is None:
            why = held if isinstance(held, str) else "what it reads is not known"
            return Pairing(None, None, f"no ONNX counterpart: it only moves its input {layout.binding}, and {why}")
        if held.window is not None:
            return Pairing(None, None, f"no ONNX counterpart: it moves a buffer that is {held.tensor} only in part")
        return Pairing(held.tensor, held.node, "", (*held.steps, Step("reshape", layout.base_shape),
                                                    *layout.steps), layout.window,
                       _via(held.via, layout.steps, moved=True), moved=True)


def _via(onnx_via: str, steps, moved: bool = False) -> str:
    moves = [s.text() for s in steps if s.kind != "reshape"]
    parts = [onnx_via] if onnx_via else []
    if moves:
        parts.append(("moved by this dispatch: " if moved else "then ") + ", ".join(moves))
    return "; ".join(parts)


def held_by(pairing: Pairing, whole_shape) -> Pairing | str:
    """What a buffer written by a result with `pairing` holds, for a dispatch that reads it."""
    if pairing.tensor is None:
        return f"it comes from a result with {pairing.why_not.removeprefix('no ONNX counterpart: ') or 'none'}"
    if pairing.window is not None:
        return pairing  # _moved refuses it: outside the window the buffer holds the host's fill
    return replace(pairing, steps=(*pairing.steps, Step("reshape", tuple(whole_shape))))


def mark_partial(pairings: dict[int, list[Pairing]], producers: dict[int, list[int]],
                 nodes: dict[int, list[str]], graph: OnnxGraphOrder) -> dict[int, int]:
    """Dispatches that hold part of an ONNX op: index -> the dispatch that completes it.

    A dispatch is partial when a dispatch it feeds (directly or through others) is paired with
    a tensor the first one computes or is paired with: IREE split that op over both.
    """
    ancestors: dict[int, set[int]] = {}
    for i in sorted(pairings):
        seen = set()
        for p in producers.get(i, []):
            seen.add(p)
            seen |= ancestors.get(p, set())
        ancestors[i] = seen
    partial: dict[int, int] = {}
    for later in sorted(pairings, reverse=True):
        # a piece written into part of a buffer completes no op an earlier dispatch started
        tensors = {p.tensor for p in pairings[later] if p.tensor is not None and not p.moved and p.window is None}
        if not tensors:
            continue
        for earlier in ancestors[later]:
            mine = pairings.get(earlier, [])
            if earlier in partial or (mine and all(p.tensor is not None and p.moved for p in mine)):
                continue  # a dispatch that only moves a paired input is compared as that move
            own = {p.tensor for p in pairings.get(earlier, []) if p.tensor is not None and not p.moved}
            own |= {t for n in nodes.get(earlier, []) for t in graph.outputs.get(n, [])}
            if own & tensors:
                partial[earlier] = later
    return partial
