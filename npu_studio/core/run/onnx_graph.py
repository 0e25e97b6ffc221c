"""The ONNX graph as pairing reads it: node order and dataflow, and the known moves of a tensor.

A tensor's *forms* are the tensor itself and the same values moved by the
graph's own data-movement nodes (Transpose by its `perm`, Reshape, Squeeze,
Unsqueeze, Flatten, Identity): the ones after it (IREE may move a later
transpose into the dispatch), and, for an elementwise node, the ones before
it undone (IREE may move an earlier transpose past the elementwise op,
so the dispatch computes in the layout before the transpose). Each form is
the tensor and the exact steps that move it; nothing is guessed from values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.result_layout import Step
from ..lazy_import import lazy_module

np = lazy_module("numpy")

# ONNX ops a dispatch has at most one of (its root): another one named in its
# locations was fused only by a conversion of its operand.
CONTRACTIONS = frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "QLinearMatMul",
                          "QLinearConv", "ConvInteger", "Einsum"})
MOVEMENT = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"})
# Nodes IREE computes nothing for (folded into a host reshape, or the identity at inference): they
# carry no location in a dispatch, yet a dispatch may compute nodes on both sides of them.
TRANSPARENT = MOVEMENT | {"Dropout"}
# Ops whose output element i depends on input element i only (inputs of the output's size).
ELEMENTWISE = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Where", "Relu", "LeakyRelu", "PRelu",
    "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Erf",
    "Gelu", "Clip", "Softplus", "Softsign", "Elu", "Selu", "Celu", "Mish", "Sin", "Cos", "Floor", "Ceil",
    "Round", "Sign", "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "BatchNormalization", "Not",
    "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf",
    "ThresholdedRelu", "Shrink", "Mod", "BitShift"})
MAX_MOVES = 6  # data-movement nodes followed from one tensor


@dataclass(frozen=True)
class Form:
    """ONNX tensor `tensor` (output of `node`) moved by `steps`: a layout IREE may hold it in."""

    tensor: str
    node: str
    steps: tuple[Step, ...] = ()
    via: str = ""  # how: "after Transpose k_heads", "before Transpose swap"
    shape: tuple[int, ...] = ()
    movers: tuple[str, ...] = ()  # the movement nodes it went through


class OnnxGraphOrder:
    """Node order, ops and dataflow of an ONNX graph (the imported model, node names as in the MLIR)."""

    def __init__(self, model):
        self.order: dict[str, int] = {}
        self.outputs: dict[str, list[str]] = {}
        self.inputs: dict[str, list[str]] = {}
        self.op_type: dict[str, str] = {}
        self.perm: dict[str, list[int] | None] = {}
        self.consumers: dict[str, list[str]] = {}  # tensor -> nodes reading it
        self.producer: dict[str, str] = {}  # tensor -> node writing it
        initializers = {t.name for t in model.graph.initializer}
        self.step: dict[str, float] = {}  # DequantizeLinear node -> its largest scale: one quantization step
        scales = {t.name: t for t in model.graph.initializer}
        self.graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
        for i, node in enumerate(model.graph.node):
            self.order[node.name] = i
            self.outputs[node.name] = [o for o in node.output if o]
            self.inputs[node.name] = list(node.input)
            self.op_type[node.name] = node.op_type
            if node.op_type == "DequantizeLinear" and len(node.input) > 1 and node.input[1] in scales:
                from onnx import numpy_helper

                self.step[node.name] = float(np.max(np.abs(numpy_helper.to_array(scales[node.input[1]]))))
            if node.op_type == "Transpose":
                self.perm[node.name] = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
            for t in node.input:
                self.consumers.setdefault(t, []).append(node.name)
            for t in node.output:
                self.producer[t] = node.name

    def varying(self) -> set[str]:
        """The tensors whose values depend on a model input (the others are constants of the model)."""
        if not hasattr(self, "_varying"):
            found = set(self.graph_inputs)
            for node in sorted(self.order, key=self.order.__getitem__):  # graph order is topological
                if any(t in found for t in self.inputs[node]):
                    found.update(self.outputs[node])
            self._varying = found
        return self._varying

    def computed_by(self, nodes: list[str], roots: list[str]) -> list[str]:
        """The nodes a dispatch computes: its root's nodes and the non-contractions they feed within `nodes`
        (directly or through nodes that compute nothing, which no location names: a Reshape, a Dropout)."""
        inside = set(nodes)
        start = [r for r in roots if r in inside and r in self.order]
        if not start:
            return list(nodes)
        found, stack, passed = set(start), list(start), set()
        while stack:
            for t in self.outputs.get(stack.pop(), []):
                for c in self.consumers.get(t, []):
                    if c in inside and c not in found and self.op_type.get(c) not in CONTRACTIONS:
                        found.add(c)
                        stack.append(c)
                    elif c not in inside and c not in passed and self.op_type.get(c) in TRANSPARENT:
                        passed.add(c)
                        stack.append(c)
        return [n for n in nodes if n in found]

    def latest_first(self, nodes) -> list[str]:
        return sorted((n for n in set(nodes) if n in self.order), key=self.order.__getitem__, reverse=True)

    def tensors(self, nodes: list[str]) -> list[str]:
        """Every output of `nodes`, and every tensor their forms go through (what onnxruntime must expose)."""
        out = []
        for n in self.latest_first(nodes):
            for t in self.outputs[n]:
                out.append(t)
                out += self._moved_downstream(t) + self._moved_upstream(n, t)
        return list(dict.fromkeys(out))

    def _moved_downstream(self, tensor: str, depth: int = 0) -> list[str]:
        if depth >= MAX_MOVES:
            return []
        out = []
        for c in self.consumers.get(tensor, []):
            if self.op_type[c] in MOVEMENT and self.inputs[c][:1] == [tensor]:
                for t in self.outputs[c]:
                    out += [t, *self._moved_downstream(t, depth + 1)]
        return out

    def _moved_upstream(self, node: str, tensor: str) -> list[str]:
        """Tensors on the elementwise/movement paths into `node` (their shapes undo the moves)."""
        out, stack, seen = [], [node], set()
        while stack and len(seen) < 4 * MAX_MOVES:
            n = stack.pop()
            if n in seen or self.op_type.get(n) not in ELEMENTWISE | MOVEMENT:
                continue
            seen.add(n)
            data = self.inputs[n][:1] if self.op_type[n] in MOVEMENT else self.inputs[n]
            for t in data:
                if t in self.producer:
                    out.append(t)
                    stack.append(self.producer[t])
        return out

    def forms(self, node: str, tensor: str, shapes: dict[str, tuple[int, ...]]) -> list[Form]:
        """`tensor` (an output of `node`) and its moved forms; shapes of tensors onnxruntime gave."""
        if tensor not in shapes:
            return []
        found = [Form(tensor, node, (), "", shapes[tensor])]
        self._downstream(found[0], tensor, shapes, found, 0)
        if self.op_type.get(node) in ELEMENTWISE:
            self._upstream(node, found[0], shapes, found, 0)
        return found

    def _step(self, mover: str, src: str, dst: str, shapes, undo: bool) -> Step | None:
        """The step a movement node takes from `src` to `dst` (or back, `undo`)."""
        if self.op_type[mover] == "Transpose":
            rank = len(shapes[src])
            perm = self.perm.get(mover) or list(range(rank))[::-1]
            return Step("transpose", perm=tuple(int(i) for i in (np.argsort(perm) if undo else perm)))
        return Step("reshape", shapes[src] if undo else shapes[dst])

    def _downstream(self, form: Form, end: str, shapes, found: list[Form], depth: int) -> None:
        """Follow the movement nodes reading `end` (which holds `form`'s values)."""
        if depth >= MAX_MOVES:
            return
        for c in self.consumers.get(end, []):
            if self.op_type[c] not in MOVEMENT or self.inputs[c][:1] != [end]:
                continue
            for t in self.outputs[c]:
                if t not in shapes:
                    continue
                step = self._step(c, end, t, shapes, undo=False)
                moved = Form(form.tensor, form.node, (*form.steps, step), f"as {t} after {self.op_type[c]} {c}",
                             shapes[t], (*form.movers, c))
                found.append(moved)
                self._downstream(moved, t, shapes, found, depth + 1)

    def _upstream(self, node: str, form: Form, shapes, found: list[Form], depth: int) -> None:
        """Undo the moves on the paths into elementwise `node` (whose output has `form`'s layout)."""
        if depth >= MAX_MOVES:
            return
        size = int(np.prod(form.shape, dtype=np.int64))
        for t in self.inputs[node]:
            if t not in shapes or int(np.prod(shapes[t], dtype=np.int64)) != size or t not in self.producer:
                continue  # a broadcast operand (or a constant) does not set the layout
            if tuple(shapes[t]) != tuple(form.shape) and self.op_type[node] not in MOVEMENT:
                continue  # an elementwise op's full-size operand has its output's shape
            p = self.producer[t]
            kind = self.op_type[p]
            if kind in MOVEMENT:
                src = self.inputs[p][0]
                if src not in shapes:
                    continue
                step = self._step(p, src, t, shapes, undo=True)
                moved = Form(form.tensor, form.node, (*form.steps, step), f"before {kind} {p}", shapes[src],
                             (*form.movers, p))
                found.append(moved)
                self._upstream_from(p, moved, shapes, found, depth + 1)
            elif kind in ELEMENTWISE:
                self._upstream(p, form, shapes, found, depth + 1)

    def _upstream_from(self, mover: str, form: Form, shapes, found, depth) -> None:
        """Keep undoing moves above movement node `mover` (its input has `form`'s layout)."""
        src = self.inputs[mover][0]
        p = self.producer.get(src)
        if p is None or depth >= MAX_MOVES:
            return
        if self.op_type[p] in MOVEMENT:
            inner = self.inputs[p][0]
            if inner in shapes:
                step = self._step(p, inner, src, shapes, undo=True)
                moved = Form(form.tensor, form.node, (*form.steps, step), f"before {self.op_type[p]} {p}",
                             shapes[inner], (*form.movers, p))
                found.append(moved)
                self._upstream_from(p, moved, shapes, found, depth + 1)
        elif self.op_type[p] in ELEMENTWISE:
            self._upstream(p, form, shapes, found, depth + 1)
