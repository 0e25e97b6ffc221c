"""How a dispatch's result is laid out: the data movement between its last computing op and the store.

IREE moves transposes and reshapes into dispatches: a matmul's result may
be stored transposed, a copy dispatch may only transpose or pad what it
reads. Read backwards from each `dispatch.tensor.store`, the ops that only
move data (reshapes, transposes, copies with permuted maps, static slices
and pads) give the steps that turn the value of the op before them (the
base: a computing op, or an input binding the dispatch loads) into the
stored result. The steps are exact: they come from IREE's own IR, never
from names or values, so a reference can be moved the same way before it
is compared (`apply_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lazy_import import lazy_module
from .flow_functions import dispatch_functions

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start
np = lazy_module("numpy")

LOAD = "iree_tensor_ext.dispatch.tensor.load"
STORE = "iree_tensor_ext.dispatch.tensor.store"
RESHAPES = frozenset({"tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape"})


@dataclass(frozen=True)
class Step:
    """One data movement: reshape (to `shape`), transpose (`perm`), slice (`starts`, `shape`, `strides`)
    or pad (`low`, `shape` is the padded shape, `value`)."""

    kind: str
    shape: tuple[int, ...] = ()
    perm: tuple[int, ...] = ()
    starts: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    low: tuple[int, ...] = ()
    value: float = 0.0

    def text(self) -> str:
        if self.kind == "transpose":
            return f"transposed {list(self.perm)}"
        if self.kind == "slice":
            return f"sliced at {list(self.starts)} to {'x'.join(map(str, self.shape))}"
        if self.kind == "pad":
            return f"padded to {'x'.join(map(str, self.shape))} at {list(self.low)} with {self.value:g}"
        return f"reshaped to {'x'.join(map(str, self.shape)) or 'scalar'}"


def apply_steps(array, steps) -> np.ndarray:
    """`array` moved by `steps`, in order."""
    a = np.asarray(array)
    for s in steps:
        if s.kind == "reshape":
            a = a.reshape(s.shape)
        elif s.kind == "transpose":
            a = np.transpose(a, s.perm)
        elif s.kind == "slice":
            a = a[tuple(slice(b, b + n * st, st) for b, n, st in zip(s.starts, s.shape, s.strides))]
        elif s.kind == "pad":
            out = np.full(s.shape, s.value, dtype=a.dtype if a.dtype.kind == "f" or s.value == int(s.value)
                          else np.float64)
            out[tuple(slice(lo, lo + n) for lo, n in zip(s.low, a.shape))] = a
            a = out
        else:
            raise ValueError(f"unknown step {s.kind!r}")
    return a


def element_order(shape, steps) -> np.ndarray:
    """Which element of a `shape` array each element of the moved result is (-1: padding), row-major."""
    return apply_steps(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), _index_safe(steps)).ravel()


def _index_safe(steps):
    return [Step("pad", s.shape, low=s.low, value=-1) if s.kind == "pad" else s for s in steps]


@dataclass
class ResultLayout:
    """A stored result as steps applied to a base value."""

    base: str  # "compute": the op `base_op` computes it; "input": the dispatch loads it from binding `binding`
    base_shape: tuple[int, ...]
    steps: list[Step] = field(default_factory=list)
    base_op: str = ""
    binding: int | None = None  # for base "input": the function argument loaded
    why_unknown: str = ""  # set when the result cannot be described (then `steps` is empty)
    # A result the dispatch writes only in part (into a buffer the host filled, as a padded input):
    # the part it writes, as (starts, sizes); the steps give that part.
    window: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    base_nodes: tuple[str, ...] = ()  # for base "compute": the ONNX nodes the computing op's location names

    def written(self, result):
        """The part of `result` the dispatch wrote."""
        if self.window is None:
            return result
        starts, sizes = self.window
        return result[tuple(slice(b, b + n) for b, n in zip(starts, sizes))]


def _static(values) -> tuple[int, ...] | None:
    out = tuple(int(v) for v in values)
    return None if any(v < 0 for v in out) else out


def _shape(value) -> tuple[int, ...] | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    return tuple(t.shape)


def _dense(op, name) -> tuple[int, ...] | None:
    if name not in op.attributes:
        return None
    return _static(ir.DenseI64ArrayAttr(op.attributes[name]))


def _copy_perm(op) -> tuple[int, ...] | None:
    """The transpose a one-input linalg.generic that yields its input performs, or None."""
    ops = list(op.regions[0].blocks[0].operations) if op.regions and len(op.regions[0].blocks) else []
    if len(op.operands) != 2 or len(ops) != 1 or ops[0].operation.name != "linalg.yield":
        return None
    block = op.regions[0].blocks[0]
    if list(ops[0].operation.operands) != [block.arguments[0]]:
        return None
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in it for it in iterators):
        return None
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not all(m.is_permutation for m in maps):
        return None
    in_pos = {e.position: j for j, e in enumerate(maps[0].results)}
    return tuple(in_pos[e.position] for e in maps[1].results)


def _pad_value(op) -> float | None:
    """A tensor.pad's constant padding value."""
    ops = list(op.regions[0].blocks[0].operations)
    yielded = ops[-1].operation.operands[0]
    owner = yielded.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        owner = getattr(owner, "operation", owner)
        if isinstance(owner, ir.Block) or owner.name != "arith.constant":
            return None
    return _constant_value(owner)


def _constant_value(op) -> float | None:
    try:
        attr = op.attributes["value"]
        if isinstance(attr, ir.FloatAttr):
            return float(attr.value)
        if isinstance(attr, ir.IntegerAttr):
            return float(attr.value)
    except (KeyError, ValueError):
        pass
    return None


def _fill_value(value) -> float | None:
    """The value a tensor was filled with (linalg.fill of a constant), or None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    owner = owner.operation
    if owner.name != "linalg.fill":
        return None
    src = owner.operands[0].owner
    if isinstance(src, ir.Block):
        return None
    src = src.operation
    return _constant_value(src) if src.name == "arith.constant" else None


def _step_back(op, value):
    """(the value `op` moves, the step from it to `value`) or (None, reason) when `op` computes."""
    name = op.name
    shape = _shape(value)
    if shape is None:
        return None, "a dynamic shape"
    if name in RESHAPES:
        return op.operands[0], Step("reshape", shape)
    if name == "linalg.transpose":
        perm = _dense(op, "permutation")
        return (op.operands[0], Step("transpose", perm=perm)) if perm is not None else (None, "")
    if name == "linalg.generic":
        perm = _copy_perm(op)
        if perm is not None:
            return op.operands[0], Step("transpose", perm=perm)
        return None, ""
    if name == "tensor.extract_slice":
        src = _shape(op.operands[0])
        starts, sizes, strides = (_dense(op, k) for k in ("static_offsets", "static_sizes", "static_strides"))
        if src is None or None in (starts, sizes, strides) or len(op.operands) > 1:
            return None, "a slice at run-time offsets"
        sliced = Step("slice", sizes, starts=starts, strides=strides)
        if tuple(sizes) != shape:  # a rank-reducing slice: then drop the unit dims
            return op.operands[0], [sliced, Step("reshape", shape)]
        return op.operands[0], sliced
    if name == "tensor.pad":
        low = _dense(op, "static_low")
        value_ = _pad_value(op)
        if low is None or value_ is None or len(op.operands) > 1:
            return None, "a pad by run-time amounts or values"
        return op.operands[0], Step("pad", shape, low=low, value=value_)
    if name == "tensor.insert_slice":
        fill = _fill_value(op.operands[1])
        starts, sizes, strides = (_dense(op, k) for k in ("static_offsets", "static_sizes", "static_strides"))
        src = _shape(op.operands[0])
        if fill is None or starts is None or src is None or len(op.operands) > 2 or any(s != 1 for s in strides):
            return None, ""
        steps = [] if tuple(sizes) == src else [Step("reshape", tuple(sizes))]
        return op.operands[0], [*steps, Step("pad", shape, low=starts, value=fill)]
    return None, ""


def layout_of(stored) -> ResultLayout:
    """The layout of one stored value (the operand of a `dispatch.tensor.store`)."""
    steps: list[Step] = []
    value = stored
    for _ in range(64):  # chains are short; a bound keeps a strange body from looping
        shape = _shape(value)
        if shape is None:
            return ResultLayout("unknown", (), why_unknown="its result has a dynamic shape")
        owner = value.owner
        if isinstance(owner, ir.Block):
            return ResultLayout("unknown", shape, why_unknown="its result is a block argument")
        op = owner.operation
        if op.name == LOAD:
            arg = op.operands[0]
            if not isinstance(arg.owner, ir.Block) or len(op.operands) > 1:
                return ResultLayout("unknown", shape, why_unknown="it loads at run-time offsets")
            sizes, starts = _dense(op, "static_sizes"), _dense(op, "static_offsets")
            whole = tuple(ir.RankedTensorType(arg.type.bound_type).shape) if hasattr(arg.type, "bound_type") \
                else None
            if whole is None:
                whole = _binding_shape(arg.type)
            if whole is None or sizes is None or starts is None:
                return ResultLayout("unknown", shape, why_unknown="it loads a binding of unknown shape")
            pre: list[Step] = []
            if tuple(sizes) != whole or any(starts):
                strides = _dense(op, "static_strides") or tuple(1 for _ in sizes)
                pre.append(Step("slice", tuple(sizes), starts=starts, strides=strides))
            if tuple(sizes) != shape:
                pre.append(Step("reshape", shape))
            return ResultLayout("input", whole, pre + steps[::-1], op.name, arg.arg_number)
        back, step = _step_back(op, value)
        if back is None:
            if step:
                return ResultLayout("unknown", shape, why_unknown=f"its result goes through {step}")
            return ResultLayout("compute", shape, steps[::-1], op.name, base_nodes=_value_names(op, value))
        steps.extend(reversed(step) if isinstance(step, list) else [step])
        value = back
    return ResultLayout("unknown", (), why_unknown="its data movement is too long to follow")


def _location_names(loc) -> tuple[str, ...]:
    from .dispatch_index.provenance import onnx_names

    names: list[str] = []
    onnx_names(loc, names, set())
    return tuple(names)


def _value_names(op, value) -> tuple[str, ...]:
    """The ONNX nodes named where `value` (a result of `op`) is computed: for a linalg op with a body,
    the location of the op that makes the value it yields (a generic with two results computes
    each at its own node), else the op's own location."""
    try:
        k = ir.OpResult(value).result_number
        body = op.regions[0].blocks[0] if len(op.regions) and len(op.regions[0].blocks) else None
        if body is not None:
            last = list(body.operations)[-1].operation
            if last.name == "linalg.yield" and k < len(last.operands):
                made = last.operands[k].owner
                if not isinstance(made, ir.Block):
                    names = _location_names(made.operation.location if hasattr(made, "operation") else made.location)
                    if names:
                        return names
    except (TypeError, ValueError, IndexError):
        pass
    return _location_names(op.location)


def _binding_shape(t) -> tuple[int, ...] | None:
    """The tensor shape of a `!iree_tensor_ext.dispatch.tensor<...:tensor<AxBxf32>>` type, from its text."""
    import re

    m = re.search(r"tensor<((?:\d+x)*)[a-zA-Z]\w*>", str(t))
    if m is None:
        return None
    return tuple(int(d) for d in m.group(1).split("x") if d)


def function_layouts(func) -> list[ResultLayout]:
    """One layout per result binding of a dispatch function, in argument order.

    A binding written by more than one store, or only in part, has no layout (it is a
    concatenation's piece or an in-place update): its `why_unknown` says so.
    """
    stores: dict[int, list] = {}
    block = func.regions[0].blocks[0]
    for op in _walk(block):
        if op.name == STORE and isinstance(op.operands[1].owner, ir.Block):
            stores.setdefault(op.operands[1].arg_number, []).append(op)
    out = []
    for arg in sorted(stores):
        ops = stores[arg]
        whole = _binding_shape(ops[0].operands[1].type)
        sizes, starts = _dense(ops[0], "static_sizes"), _dense(ops[0], "static_offsets")
        strides = _dense(ops[0], "static_strides")
        if len(ops) > 1 or whole is None or sizes is None or starts is None or strides is None or \
                any(s != 1 for s in strides) or len(ops[0].operands) > 2:
            out.append(ResultLayout("unknown", whole or (), why_unknown="it writes its result in pieces "
                                                                        "(a concatenation or an in-place update)"))
            continue
        layout = layout_of(ops[0].operands[0])
        if layout.why_unknown == "" and tuple(_shape(ops[0].operands[0]) or ()) != tuple(sizes):
            layout.steps.append(Step("reshape", tuple(sizes)))
        if tuple(sizes) != whole:
            layout.window = (starts, tuple(sizes))
        out.append(layout)
    return out


def _walk(block):
    for op in block.operations:
        op = op.operation
        yield op
        for region in op.regions:
            for b in region.blocks:
                yield from _walk(b)


def module_layouts(module) -> dict[tuple[str, str], list[ResultLayout]]:
    """(executable, export function) -> its result layouts, for every dispatch function of a flow module."""
    return {key: function_layouts(f) for key, f in dispatch_functions(module)}
