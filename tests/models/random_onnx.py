"""Random valid ONNX models (ir_version 10, opset 17) for the differential corpus (issue 35, item 6).

A model is a short chain of ops over a 2-D, 3-D or 4-D float tensor, with side branches joined
again by Add or Concat: conv (strided, dilated, grouped, depthwise), matmul with broadcast
batch dims, add/mul/relu/clip/gelu/erf, softmax, layer and batch norm, pad, pooling, transpose,
reshape, slice, gather, concat, resize, QDQ int8 chains (per-tensor activations, per-channel
weights) and stretches computed in f16 between casts. Shapes are tracked here and checked by
onnx's strict shape inference (`onnx.checker` with full_check), so a wrong shape is the
generator's bug, never a model handed on.

The choices come through `Choices`: Hypothesis draws them (`onnx_models()`, for shrinking and
the generator's own property tests) or a seeded `random.Random` does (`model_for_seed`, for the
corpus: model N of seed S is the same on every machine and every Hypothesis version).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

OPSET, IR_VERSION = 17, 10
MAX_ELEMENTS = 4096  # per tensor: every model compiles in a few seconds
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
NP_TYPE = {F32: np.float32, F16: np.float16}
# Arithmetic classes, loosest last: the harness takes its tolerance from the loosest the model uses.
ARITH_F32, ARITH_F16, ARITH_INT8 = "f32", "f16", "int8"


class Choices:
    """The generator's only source of randomness."""

    def integer(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def choice(self, items):
        return items[self.integer(0, len(items) - 1)]

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1


class RandomChoices(Choices):
    def __init__(self, seed: int):
        self._r = random.Random(seed)

    def integer(self, lo, hi):
        return self._r.randint(lo, hi)


class DrawChoices(Choices):
    def __init__(self, draw):
        self._draw = draw

    def integer(self, lo, hi):
        return self._draw(st.integers(lo, hi))


@dataclass
class Tensor:
    name: str
    shape: list[int]
    dtype: int = F32

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass
class Builder:
    ch: Choices
    rng: np.random.Generator
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # what was built, for the regression notes
    arith: set[str] = field(default_factory=lambda: {ARITH_F32})
    _n: int = 0

    def fresh(self, stem: str) -> str:
        self._n += 1
        return f"{stem}{self._n}"

    def init(self, stem: str, array: np.ndarray) -> str:
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, shape, fan_in: int, dtype=np.float32) -> np.ndarray:
        bound = 1.0 / math.sqrt(max(fan_in, 1))
        return self.rng.uniform(-bound, bound, shape).astype(dtype)

    def node(self, op: str, inputs, shape, dtype=F32, label: str | None = None, **attrs) -> Tensor:
        out = self.fresh(op.lower() + "_")
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=self.fresh("n_" + op.lower() + "_"), **attrs))
        self.ops.append(label or op)
        return Tensor(out, list(shape), dtype)


def _conv_out(size: int, k: int, stride: int, pad: int, dilation: int = 1) -> int:
    return (size + pad - dilation * (k - 1) - 1) // stride + 1


# -- ops: each takes (builder, tensor) and returns the new tensor, or None when it does not apply --------

def conv(b: Builder, x: Tensor, depthwise: bool = False):
    if len(x.shape) != 4 or x.dtype != F32:
        return None
    n, c, h, w = x.shape
    k = b.ch.choice([1, 3] if min(h, w) >= 3 else [1])
    stride, dil = b.ch.integer(1, 2), (b.ch.integer(1, 2) if k == 3 and min(h, w) >= 6 else 1)
    pads = [b.ch.integer(0, k // 2 * dil) for _ in range(4)]
    group = c if depthwise else b.ch.choice([g for g in (1, 2) if c % g == 0])
    cout = c * b.ch.integer(1, 2) if depthwise else b.ch.choice([2, 4, 6, 8, 12, 16])
    if cout % group:
        cout = group * max(1, cout // group)
    oh, ow = _conv_out(h, k, stride, pads[0] + pads[2], dil), _conv_out(w, k, stride, pads[1] + pads[3], dil)
    if oh < 1 or ow < 1 or n * cout * oh * ow > MAX_ELEMENTS:
        return None
    shape = (cout, c // group, k, k)
    wname = _conv_weight(b, shape, c // group * k * k)
    inputs = [x.name, wname] + ([b.init("B", b.weight((cout,), 4))] if b.ch.boolean() else [])
    return b.node("Conv", inputs, [n, cout, oh, ow], label="DepthwiseConv" if depthwise else "Conv",
                  kernel_shape=[k, k], strides=[stride, stride], pads=pads, dilations=[dil, dil], group=group)


def _conv_weight(b: Builder, shape, fan_in: int) -> str:
    """A float weight, or (in a QDQ model) an int8 one dequantized per output channel."""
    w = b.weight(shape, fan_in)
    if ARITH_INT8 not in b.arith:
        return b.init("W", w)
    scale = (np.abs(w).reshape(shape[0], -1).max(axis=1) / 127).astype(np.float32) + np.float32(1e-6)
    q = np.clip(np.round(w / scale.reshape((-1,) + (1,) * (len(shape) - 1))), -127, 127).astype(np.int8)
    out = b.fresh("wdq_")
    b.nodes.append(helper.make_node("DequantizeLinear", [b.init("Wq", q), b.init("ws", scale),
                                                         b.init("wz", np.zeros(shape[0], np.int8))],
                                    [out], name=b.fresh("n_wdq_"), axis=0))
    return out


def depthwise(b, x):
    return conv(b, x, depthwise=True)


def matmul(b: Builder, x: Tensor):
    if len(x.shape) < 2 or x.dtype not in (F32, F16):
        return None
    k, n = x.shape[-1], b.ch.choice([4, 8, 16, 24, 32])
    batch = b.ch.choice([[], [1], [x.shape[-3]]] if len(x.shape) >= 3 else [[], [1], [2]])
    out_batch = list(np.broadcast_shapes(tuple(x.shape[:-2]), tuple(batch)))
    shape = out_batch + [x.shape[-2], n]
    if math.prod(shape) > MAX_ELEMENTS:
        return None
    w = b.weight(batch + [k, n], k, NP_TYPE[x.dtype])
    if x.dtype == F32 and ARITH_INT8 in b.arith and not batch:  # per-channel (axis 1: output column) weight
        scale = (np.abs(w).max(axis=0) / 127).astype(np.float32) + np.float32(1e-6)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        wname = b.fresh("wdq_")
        b.nodes.append(helper.make_node("DequantizeLinear", [b.init("Wq", q), b.init("ws", scale),
                                                             b.init("wz", np.zeros(n, np.int8))],
                                        [wname], name=b.fresh("n_wdq_"), axis=1))
    else:
        wname = b.init("W", w)
    return b.node("MatMul", [x.name, wname], shape, x.dtype)


def binary(b: Builder, x: Tensor):
    """Add or Mul with a broadcast constant: trailing dims kept or set to 1, leading dims dropped."""
    op = b.ch.choice(["Add", "Mul"])
    keep = b.ch.integer(0, len(x.shape))
    shape = [d if b.ch.boolean() else 1 for d in x.shape[len(x.shape) - keep:]]
    c = b.rng.uniform(0.5, 1.5, shape) if op == "Mul" else b.rng.uniform(-0.5, 0.5, shape)
    return b.node(op, [x.name, b.init("c", c.astype(NP_TYPE[x.dtype]))], x.shape, x.dtype)


def unary(b: Builder, x: Tensor):
    op = b.ch.choice(["Relu", "Erf", "Clip", "Gelu"])
    if op == "Clip":
        lo = float(b.ch.choice([-1.0, -0.5, 0.0]))
        hi = float(b.ch.choice([0.5, 1.0, 6.0]))
        bounds = [b.init("lo", np.array(lo, NP_TYPE[x.dtype])), b.init("hi", np.array(hi, NP_TYPE[x.dtype]))]
        return b.node("Clip", [x.name, *bounds], x.shape, x.dtype)
    if op == "Gelu":  # not an op before opset 20: 0.5 x (1 + erf(x / sqrt 2)), as exporters write it
        t = np.dtype(NP_TYPE[x.dtype]).type
        d = b.node("Div", [x.name, b.init("sqrt2", np.array(math.sqrt(2), t))], x.shape, x.dtype, label="Gelu")
        e = b.node("Erf", [d.name], x.shape, x.dtype, label="Gelu")
        a = b.node("Add", [e.name, b.init("one", np.array(1, t))], x.shape, x.dtype, label="Gelu")
        m = b.node("Mul", [x.name, a.name], x.shape, x.dtype, label="Gelu")
        return b.node("Mul", [m.name, b.init("half", np.array(0.5, t))], x.shape, x.dtype, label="Gelu")
    return b.node(op, [x.name], x.shape, x.dtype)


def softmax(b: Builder, x: Tensor):
    if x.dtype != F32:
        return None
    return b.node("Softmax", [x.name], x.shape, axis=b.ch.integer(-len(x.shape), len(x.shape) - 1))


def layernorm(b: Builder, x: Tensor):
    if x.dtype != F32:
        return None
    axis = b.ch.integer(1, len(x.shape) - 1) if len(x.shape) > 1 else 0
    norm = x.shape[axis:]
    scale, bias = b.rng.uniform(0.5, 1.5, norm).astype(np.float32), b.rng.uniform(-0.5, 0.5, norm).astype(np.float32)
    return b.node("LayerNormalization", [x.name, b.init("g", scale), b.init("beta", bias)], x.shape,
                  axis=axis, epsilon=1e-5)


def batchnorm(b: Builder, x: Tensor):
    if len(x.shape) != 4 or x.dtype != F32:
        return None
    c = x.shape[1]
    params = [b.rng.uniform(0.5, 1.5, c), b.rng.uniform(-0.5, 0.5, c), b.rng.uniform(-0.5, 0.5, c),
              b.rng.uniform(0.5, 2.0, c)]  # scale, bias, mean, variance > 0
    names = [b.init(s, p.astype(np.float32)) for s, p in zip(("bs", "bb", "bm", "bv"), params)]
    return b.node("BatchNormalization", [x.name, *names], x.shape, epsilon=1e-5)


def pad(b: Builder, x: Tensor):
    r = len(x.shape)
    pads = [b.ch.integer(0, 2) if i >= r - 2 else 0 for i in range(r)]
    pads += [b.ch.integer(0, 2) if i >= r - 2 else 0 for i in range(r)]
    shape = [d + pads[i] + pads[i + r] for i, d in enumerate(x.shape)]
    if math.prod(shape) > MAX_ELEMENTS:
        return None
    mode = b.ch.choice(["constant", "constant", "reflect", "edge"])
    if mode == "reflect" and any(p >= d for p, d in zip(pads[:r] + pads[r:], x.shape * 2)):
        mode = "constant"
    inputs = [x.name, b.init("pads", np.array(pads, np.int64))]
    if mode == "constant":
        inputs.append(b.init("pv", np.array(b.ch.choice([0.0, 0.5]), NP_TYPE[x.dtype])))
    return b.node("Pad", inputs, shape, x.dtype, mode=mode)


def pool(b: Builder, x: Tensor):
    if len(x.shape) != 4 or x.dtype != F32:
        return None
    n, c, h, w = x.shape
    op = b.ch.choice(["MaxPool", "AveragePool", "GlobalAveragePool"])
    if op == "GlobalAveragePool":
        return b.node(op, [x.name], [n, c, 1, 1])
    k = b.ch.choice([2, 3])
    if min(h, w) < k:
        return None
    stride = b.ch.integer(1, 2)
    pads = [b.ch.integer(0, k // 2) for _ in range(4)]
    oh, ow = _conv_out(h, k, stride, pads[0] + pads[2]), _conv_out(w, k, stride, pads[1] + pads[3])
    extra = {"count_include_pad": b.ch.integer(0, 1)} if op == "AveragePool" else {}
    return b.node(op, [x.name], [n, c, oh, ow], kernel_shape=[k, k], strides=[stride, stride], pads=pads, **extra)


def transpose(b: Builder, x: Tensor):
    perm = list(range(len(x.shape)))
    for i in range(len(perm) - 1, 0, -1):  # Fisher-Yates through the choices
        j = b.ch.integer(0, i)
        perm[i], perm[j] = perm[j], perm[i]
    return b.node("Transpose", [x.name], [x.shape[p] for p in perm], x.dtype, perm=perm)


def reshape(b: Builder, x: Tensor):
    total, rank = x.size, b.ch.integer(2, 4)
    shape = []
    for _ in range(rank - 1):
        divisors = [d for d in range(1, min(total, 32) + 1) if total % d == 0]
        shape.append(b.ch.choice(divisors))
        total //= shape[-1]
    shape.append(total)
    spec = list(shape)
    if b.ch.boolean():
        spec[b.ch.integer(0, rank - 1)] = -1
    return b.node("Reshape", [x.name, b.init("shape", np.array(spec, np.int64))], shape, x.dtype)


def slice_(b: Builder, x: Tensor):
    axis = b.ch.integer(0, len(x.shape) - 1)
    d = x.shape[axis]
    if d < 2:
        return None
    step = b.ch.choice([1, 1, 2, -1])
    if step > 0:
        start = b.ch.integer(0, d - 1)
        end = b.ch.integer(start + 1, d)
        count = len(range(start, end, step))
    else:
        start = b.ch.integer(1, d - 1)
        end = b.ch.integer(-1, start - 1)
        count = len(range(start, end if end >= 0 else -1, -1))
        end = end if end >= 0 else -d - 1  # -d-1 clamps to "before the first element"
    shape = list(x.shape)
    shape[axis] = count
    ints = [b.init(s, np.array([v], np.int64)) for s, v in (("st", start), ("en", end), ("ax", axis), ("sp", step))]
    return b.node("Slice", [x.name, *ints], shape, x.dtype)


def gather(b: Builder, x: Tensor):
    axis = b.ch.integer(0, len(x.shape) - 1)
    d = x.shape[axis]
    count = b.ch.integer(0, 4)  # 0: one scalar index, which drops the axis
    idx = [b.ch.integer(-d, d - 1) for _ in range(max(count, 1))]
    indices = np.array(idx[0] if count == 0 else idx, np.int64)
    shape = x.shape[:axis] + ([] if count == 0 else [count]) + x.shape[axis + 1:]
    if not shape:
        return None
    return b.node("Gather", [x.name, b.init("idx", indices)], shape, x.dtype, axis=axis)


def resize(b: Builder, x: Tensor):
    if len(x.shape) != 4 or x.dtype != F32:
        return None
    n, c, h, w = x.shape
    s = b.ch.choice([2.0, 0.5]) if min(h, w) >= 4 else 2.0
    shape = [n, c, int(math.floor(h * s)), int(math.floor(w * s))]
    if math.prod(shape) > MAX_ELEMENTS:
        return None
    mode = b.ch.choice(["nearest", "linear"])
    attrs = {"mode": mode, "coordinate_transformation_mode": b.ch.choice(["asymmetric", "half_pixel"])}
    if mode == "nearest":
        attrs["nearest_mode"] = b.ch.choice(["floor", "round_prefer_floor"])
    scales = b.init("scales", np.array([1, 1, s, s], np.float32))
    return b.node("Resize", [x.name, "", scales], shape, **attrs)


def qdq(b: Builder, x: Tensor):
    """QuantizeLinear -> DequantizeLinear (int8, per tensor): what a quantizer puts before each op."""
    if x.dtype != F32:
        return None
    b.arith.add(ARITH_INT8)
    scale = b.init("qs", np.array(b.ch.choice([0.02, 0.03125, 0.05]), np.float32))
    zp = b.init("qz", np.array(b.ch.integer(-8, 8), np.int8))
    q = b.node("QuantizeLinear", [x.name, scale, zp], x.shape, TensorProto.INT8)
    return b.node("DequantizeLinear", [q.name, scale, zp], x.shape)


def f16_stretch(b: Builder, x: Tensor):
    """Cast to f16, one or two ops computed in f16, cast back."""
    if x.dtype != F32:
        return None
    b.arith.add(ARITH_F16)
    h = b.node("Cast", [x.name], x.shape, F16, to=F16)
    for _ in range(b.ch.integer(1, 2)):
        h = b.ch.choice([unary, binary, matmul])(b, h) or h
    return b.node("Cast", [h.name], h.shape, F32, to=F32)


OPS = [conv, depthwise, matmul, binary, unary, softmax, layernorm, batchnorm, pad, pool, transpose,
       reshape, slice_, gather, resize, qdq, f16_stretch]


def join(b: Builder, x: Tensor, side: Tensor):
    """Join a side branch back: Add when the shapes match, Concat when they differ on one axis."""
    if side.shape == x.shape:
        return b.node("Add", [x.name, side.name], x.shape)
    diff = [i for i, (p, q) in enumerate(zip(x.shape, side.shape)) if p != q]
    if len(x.shape) == len(side.shape) and len(diff) <= 1:
        axis = diff[0] if diff else 0
        shape = list(x.shape)
        shape[axis] += side.shape[axis]
        if math.prod(shape) <= MAX_ELEMENTS:
            return b.node("Concat", [x.name, side.name], shape, axis=axis)
    return None


def _input_shape(ch: Choices) -> list[int]:
    rank = ch.choice([2, 3, 4, 4, 4])
    if rank == 4:
        return [1, ch.choice([1, 2, 3, 4, 8]), ch.integer(3, 12), ch.integer(3, 12)]
    if rank == 3:
        return [ch.integer(1, 3), ch.integer(2, 16), ch.choice([4, 8, 16, 32])]
    return [ch.integer(1, 8), ch.choice([4, 8, 16, 32])]


def build_model(ch: Choices, max_ops: int = 6) -> onnx.ModelProto:
    b = Builder(ch, np.random.default_rng(ch.integer(0, 2**31 - 1)))
    x = Tensor("x", _input_shape(ch))
    inputs = [helper.make_tensor_value_info("x", F32, x.shape)]
    branch_start = None
    for _ in range(ch.integer(1, max_ops)):
        if branch_start is None and ch.integer(0, 4) == 0:
            branch_start = x  # a side branch starts here; it joins back below
        op = ch.choice(OPS)
        y = op(b, x)
        if y is not None and y.size <= MAX_ELEMENTS:
            x = y
        if branch_start is not None and branch_start is not x and ch.boolean():
            y = join(b, x, branch_start)
            x, branch_start = (y or x), None
    if not b.nodes:  # every drawn op declined: a single Relu keeps the model non-trivial
        x = b.node("Relu", [x.name], x.shape)
    if x.dtype != F32:
        x = b.node("Cast", [x.name], x.shape, F32, to=F32)
    graph = helper.make_graph(b.nodes, "random", inputs, [helper.make_tensor_value_info(x.name, F32, x.shape)],
                              b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="random_onnx")
    model.ir_version = IR_VERSION
    arith = max(b.arith, key=[ARITH_F32, ARITH_F16, ARITH_INT8].index)
    helper.set_model_props(model, {"ops": " ".join(b.ops), "arith": arith})
    onnx.checker.check_model(model, full_check=True)
    return model


def model_for_seed(seed: int, max_ops: int = 6) -> onnx.ModelProto:
    """Model number `seed` of the corpus: the same on every machine."""
    return build_model(RandomChoices(seed), max_ops)


@st.composite
def onnx_models(draw, max_ops: int = 6) -> onnx.ModelProto:
    """Hypothesis strategy over the same generator (shrinks toward fewer, simpler ops)."""
    return build_model(DrawChoices(draw), max_ops)


def props(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}
