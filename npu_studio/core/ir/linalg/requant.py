"""Requantization chains in the ops IREE fuses after an integer convolution or matmul.

A QDQ model's `i8 x i8 -> i32` op is followed, in the same dispatch, by
its requantization: convert the accumulator to float, multiply by the
scales (and add a bias), round, add the output zero point, clamp, narrow:

    sitofp i32 -> mulf/divf scale, addf bias ... -> math.roundeven
        -> addf zp -> maxnumf lo -> minnumf hi -> fptosi to i8

`find_chain` walks a body backwards from a narrowing `fptosi`/`fptoui`,
one op at a time, for as long as a `stage` (what some hardware can do:
the NPU's output stage, `npu/output_stage.py`) takes the op; `ANY_STAGE`
takes every step, which is how the dispatch index describes a dispatch's
quantization (`quantization_of`) independently of any target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...lazy_import import lazy_module

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

ROUND_OP_MODE = {"math.roundeven": "half-even", "math.round": "half-away", "math.trunc": "truncate"}
_CLAMP_OPS = ("arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf")
_SCALE_OPS = ("arith.mulf", "arith.divf")
_ZERO_POINT_OPS = ("arith.addf", "arith.subf")
TO_INT = ("arith.fptosi", "arith.fptoui")
_TO_FLOAT = ("arith.sitofp", "arith.uitofp")
# Body ops that are no vector-unit work: structure, constants, int<->int and
# float<->float width changes (the int<->float casts are work: `itof`, `ftoi`).
FREE_OPS = frozenset({"linalg.yield", "linalg.index", "arith.constant", "arith.index_cast",
                      "arith.index_castui", "arith.bitcast", "arith.extf", "arith.truncf",
                      "arith.extsi", "arith.extui", "arith.trunci"})


@dataclass
class Requantization:
    """One chain the output stage takes: what it does, for reports and the NPU IR."""

    scale: str = ""  # per-tensor | per-channel | "" (no multiply)
    bias: bool = False
    rounding: str = ""
    zero_point: bool = False
    clamp: tuple[float, ...] = ()  # the clamp bounds that are constants
    narrow: str = ""  # the type written
    ops: list[str] = field(default_factory=list)  # the body ops taken, in order
    scales: list[str] = field(default_factory=list)  # the scale and bias steps in body order: "* 0.5"
    zero_point_value: float | None = None  # the output zero point (a constant)

    def describe(self) -> str:
        return describe_requant(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "bias": self.bias, "rounding": self.rounding, "zero_point": self.zero_point,
                "clamp": [repr(float(v)) for v in self.clamp], "narrow": self.narrow}  # the NPU dialect has no floats


def describe_requant(rq: dict[str, Any]) -> str:
    """'requantize per-channel, bias, round half-even, zero point, clamp -128, 127, i8'."""
    parts = ["requantize" + (f" {rq['scale']}" if rq["scale"] else "")]
    parts += ["bias"] if rq["bias"] else []
    parts += [f"round {rq['rounding']}"] if rq["rounding"] else []
    parts += ["zero point"] if rq["zero_point"] else []
    parts += ["clamp " + ", ".join(f"{float(v):g}" for v in rq["clamp"])] if rq["clamp"] else []
    return ", ".join(parts + [rq["narrow"]])


@dataclass(frozen=True)
class _AnyStage:
    """A stage that takes every step of a chain (for descriptions)."""

    scale: tuple[str, ...] = ("per-tensor", "per-channel")
    rounding: str | None = None  # any mode
    zero_point: bool = True
    clamp: bool = True
    bias: bool = True
    narrow: tuple[str, ...] = ("i8", "ui8", "i16", "u8", "i32")


ANY_STAGE = _AnyStage()


def body_ops(op: ir.Operation) -> list[ir.Operation]:
    """The ops of a linalg op's body block (none for an op without a body)."""
    if not op.regions or not op.regions[0].blocks:
        return []
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _int_type(t: ir.Type, unsigned: bool) -> str:
    s = str(t)
    return ("u" + s) if unsigned and s.startswith("i") else s


def _owner_in(value: ir.Value, block_ops: set) -> ir.Operation | None:
    """The op of this body that defines `value` (None for a block argument or a capture)."""
    if isinstance(value, ir.BlockArgument):
        return None
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    owner = owner.operation
    return owner if owner in block_ops else None


def _constant(value: ir.Value) -> float | None:
    """The scalar value of a float constant captured by the body, else None."""
    if isinstance(value, ir.BlockArgument) or isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation
    if op.name != "arith.constant" or not isinstance(op.attributes["value"], ir.FloatAttr):
        return None
    return ir.FloatAttr(op.attributes["value"]).value


def _scale_mode(value: ir.Value, generic: ir.Operation) -> str | None:
    """per-tensor for a scalar constant, per-channel for an input indexed by one loop."""
    if _constant(value) is not None:
        return "per-tensor"
    if isinstance(value, ir.BlockArgument):
        operand = generic.operands[value.arg_number]
        t = operand.type
        if isinstance(t, ir.ShapedType):
            big = [d for d in t.shape if d != 1]
            return "per-tensor" if not big else "per-channel" if len(big) == 1 else None
    return None


def _split_constant(op: ir.Operation) -> tuple[ir.Value, float] | None:
    """(the other operand, the constant) of a binary op with one float constant operand."""
    if len(op.operands) != 2:
        return None
    a, b = op.operands[0], op.operands[1]
    if _constant(b) is not None:
        return a, _constant(b)
    if _constant(a) is not None and op.name != "arith.subf":
        return b, _constant(a)
    return None


# Phases of the chain in the order a backward walk meets them.
_CLAMP, _ZERO_POINT, _ROUND, _SCALE, _TO_FLOAT_PHASE = range(5)


def _phase(name: str, current: int) -> int | None:
    if name in _CLAMP_OPS:
        return _CLAMP
    if name in _ZERO_POINT_OPS:  # before the round a bias, after it the zero point
        return _SCALE if current >= _ROUND else _ZERO_POINT
    if name in ROUND_OP_MODE:
        return _ROUND
    if name in _SCALE_OPS:
        return _SCALE
    if name in _TO_FLOAT:
        return _TO_FLOAT_PHASE
    return None


_SIGN = {"arith.mulf": "*", "arith.divf": "/", "arith.addf": "+", "arith.subf": "-"}


def _step_text(op: ir.Operation, generic: ir.Operation) -> str:
    """'* 0.0280652' for a constant operand, '+ per-channel[16]' for a channel vector."""
    v = op.operands[1]
    c = _constant(v)
    if c is not None:
        return f"{_SIGN[op.name]} {c:.6g}"
    n = 0
    if isinstance(v, ir.BlockArgument) and isinstance(generic.operands[v.arg_number].type, ir.ShapedType):
        n = max(generic.operands[v.arg_number].type.shape or [1])
    return f"{_SIGN[op.name]} per-channel[{n}]"


def find_chain(end: ir.Operation, generic: ir.Operation, block: set,
               stage: Any) -> tuple[Requantization | None, list[ir.Operation], str]:
    """The requantization chain ending at the narrowing cast `end`, walking back.

    Returns the chain (None when it has no round the stage can do: then it
    is a plain cast for the vector unit), the ops it takes and, when it
    stopped before its round, why.
    """
    narrow = _int_type(end.results[0].type, end.name == "arith.fptoui")
    if narrow not in stage.narrow:
        return None, [], f"narrowing to {narrow} is not in output_stage.narrow"
    rq = Requantization(narrow=narrow)
    taken, clamp, why = [end], [], ""
    value, phase = end.operands[0], _CLAMP
    while True:
        op = _owner_in(value, block)
        p = None if op is None else _phase(op.name, phase)
        if p is None or p < phase or (p == phase and p in (_ZERO_POINT, _ROUND)):
            break
        if p == _TO_FLOAT_PHASE:
            taken.append(op)
            break
        if p == _ROUND:
            mode = ROUND_OP_MODE[op.name]
            if stage.rounding is not None and mode != stage.rounding:
                why = f"{op.name} rounds {mode}, the output stage rounds {stage.rounding}"
                break
            rq.rounding, prev = mode, op.operands[0]
        elif p == _SCALE:
            # x / s is the quantizer's form: operand 1 is the scale (or bias) either way
            what = "bias" if op.name in _ZERO_POINT_OPS else "scale"
            mode = _scale_mode(op.operands[1], generic)
            if what == "bias" and not stage.bias:
                why = "output_stage.bias is false"
                break
            if mode is None or mode not in stage.scale:
                why = f"{op.name} by a {mode or 'computed'} {what} (output_stage.scale is " \
                      f"{', '.join(stage.scale)})"
                break
            if what == "bias":
                rq.bias = True
            elif rq.scale != "per-channel":
                rq.scale = mode
            rq.scales.insert(0, _step_text(op, generic))
            prev = op.operands[0]
        else:
            split = _split_constant(op)
            flag = "clamp" if p == _CLAMP else "zero_point"
            if split is None:
                why = f"{op.name} of a value that is not a constant"
                break
            if not getattr(stage, flag):
                why = f"output_stage.{flag} is false"
                break
            prev, const = split
            if p == _CLAMP:
                clamp.append(const)
            else:
                rq.zero_point = True
                rq.zero_point_value = -const if op.name == "arith.subf" else const
        taken.append(op)
        value, phase = prev, p
    if not rq.rounding:
        return None, [], why or "no round before the narrowing cast"
    rq.clamp = tuple(sorted(clamp))
    rq.ops = [o.name for o in reversed(taken)]
    return rq, taken, ""




def quantization_of(root_input_dtypes: tuple[str, ...], acc_dtype: str,
                    fused: list[ir.Operation]) -> dict[str, Any] | None:
    """What a dispatch does of quantization, for the dispatch index: the integer
    types of its MAC op and every requantization chain of its fused ops (None
    when it has neither)."""
    chains = []
    for generic in fused:
        ops = body_ops(generic)
        block = set(ops)
        taken: set = set()
        for op in reversed(ops):
            if op.name in TO_INT and op not in taken:
                rq, chain, _ = find_chain(op, generic, block, ANY_STAGE)
                if rq is not None:
                    chains.insert(0, rq)
                    taken.update(chain)
    integer_mac = bool(root_input_dtypes) and all(t.startswith(("i", "ui")) for t in root_input_dtypes) \
        and acc_dtype.startswith("i")
    if not chains and not integer_mac:
        return None
    return {
        "inputs": " x ".join(root_input_dtypes), "accumulator": acc_dtype,
        "requant": [dict(rq.to_dict(), scales=rq.scales, zero_point_value=rq.zero_point_value)
                    for rq in chains],
        "epilogue": "; ".join(rq.describe() for rq in chains),
    }
