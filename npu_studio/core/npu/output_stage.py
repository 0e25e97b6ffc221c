"""The MAC array's output stage: requantization in hardware, and which epilogue ops it takes.

An int8 NPU drains its i32 accumulators through a fixed-function stage:
convert to float, multiply by a scale (one per tensor or one per output
channel), round, add the output zero point, clamp (which also does a
ReLU), narrow to i8/u8/i16. IREE fuses exactly that chain after an
`i8 x i8 -> i32` convolution or contraction (a QDQ model's requantize):

    sitofp i32 -> mulf/divf scale, addf bias ... -> math.roundeven -> addf zp
        -> maxnumf lo -> minnumf hi -> fptosi to i8

`split_epilogue` walks the bodies of the ops fused after a MAC op and
finds such chains, backwards from each narrowing `fptosi`/`fptoui`, one
op at a time, for as long as the target's stage can do the op. The ops
it takes cost no vector-unit cycles (the stage is pipelined with the
array's drain); every other op of the epilogue runs on the vector unit.
When a chain stops early the reason is kept (`why_not`), so a fallback
can say which part of the epilogue the stage could not take.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from iree.compiler import ir

SCALE_MODES = ("per-tensor", "per-channel")
# half-even: IEEE roundTiesToEven (math.roundeven, what ONNX QuantizeLinear
# does); half-away: ties away from zero (math.round); truncate: toward zero.
ROUNDING_MODES = ("half-even", "half-away", "truncate")
NARROW_TYPES = ("i8", "ui8", "i16")
ROUND_OP_MODE = {"math.roundeven": "half-even", "math.round": "half-away", "math.trunc": "truncate"}
_CLAMP_OPS = ("arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf")
_SCALE_OPS = ("arith.mulf", "arith.divf")
_ZERO_POINT_OPS = ("arith.addf", "arith.subf")
_TO_INT = ("arith.fptosi", "arith.fptoui")
_TO_FLOAT = ("arith.sitofp", "arith.uitofp")
# Body ops that are no vector-unit work: structure, constants, int<->int and
# float<->float width changes (the int<->float casts are work: `itof`, `ftoi`).
FREE_OPS = frozenset({"linalg.yield", "linalg.index", "arith.constant", "arith.index_cast",
                      "arith.index_castui", "arith.bitcast", "arith.extf", "arith.truncf",
                      "arith.extsi", "arith.extui", "arith.trunci"})


@dataclass(frozen=True)
class OutputStage:
    """What the MAC array's output stage can do (`[output_stage]` of a target)."""

    scale: tuple[str, ...] = ()  # scale modes it multiplies by; () = no output stage
    rounding: str = "half-even"
    zero_point: bool = False
    clamp: bool = False  # clamp to [lo, hi] (ReLU is a clamp at the zero point)
    narrow: tuple[str, ...] = ()  # integer types it writes
    bias: bool = False  # adds a bias (per tensor or per channel, as `scale` allows) before rounding

    @property
    def present(self) -> bool:
        return bool(self.scale)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scale"], d["narrow"] = list(self.scale), list(self.narrow)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "OutputStage":
        d = dict(d or {})
        d["scale"] = tuple(d.get("scale", ()))
        d["narrow"] = tuple(d.get("narrow", ()))
        return cls(**d)


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

    def describe(self) -> str:
        parts = ["requantize" + (f" {self.scale}" if self.scale else "")]
        if self.bias:
            parts.append("bias")
        if self.rounding:
            parts.append(f"round {self.rounding}")
        if self.zero_point:
            parts.append("zero point")
        if self.clamp:
            parts.append("clamp " + ", ".join(f"{v:g}" for v in self.clamp))
        parts.append(self.narrow)
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "bias": self.bias, "rounding": self.rounding, "zero_point": self.zero_point,
                "clamp": [repr(float(v)) for v in self.clamp], "narrow": self.narrow}  # the NPU dialect has no floats


@dataclass
class EpilogueSplit:
    vector_ops: list[str] = field(default_factory=list)  # body ops left to the vector unit
    requant: list[Requantization] = field(default_factory=list)
    stage_ops: list[ir.Operation] = field(default_factory=list)  # body ops the output stage computes
    why_not: str = ""  # why a chain stopped before taking a round or a narrowing cast


def body_ops(op: ir.Operation) -> list[ir.Operation]:
    """The ops of a linalg op's body block (none for an op without a body)."""
    if not op.regions or not op.regions[0].blocks:
        return []
    return [o.operation for o in op.regions[0].blocks[0].operations]


def vector_work(op: ir.Operation) -> list[str]:
    """Names of the body ops the vector unit computes (int<->float casts included)."""
    return [o.name for o in body_ops(op) if o.name not in FREE_OPS]


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


def _chain(end: ir.Operation, generic: ir.Operation, block: set,
           stage: OutputStage) -> tuple[Requantization | None, list[ir.Operation], str]:
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
            if mode != stage.rounding:
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
        taken.append(op)
        value, phase = prev, p
    if not rq.rounding:
        return None, [], why or "no round before the narrowing cast"
    rq.clamp = tuple(sorted(clamp))
    rq.ops = [o.name for o in reversed(taken)]
    return rq, taken, ""


def split_epilogue(fused: list[ir.Operation], stage: OutputStage) -> EpilogueSplit:
    """Which body ops of the ops fused after a MAC op the output stage takes."""
    out = EpilogueSplit()
    for generic in fused:
        ops = body_ops(generic)
        block = set(ops)
        taken: set = set()
        if stage.present:
            for op in reversed(ops):
                if op.name in _TO_INT and op not in taken:
                    rq, chain, why = _chain(op, generic, block, stage)
                    if rq is not None:
                        out.requant.append(rq)
                        taken.update(chain)
                        out.stage_ops += chain
                    elif why and not out.why_not:
                        out.why_not = why
        elif any(o.name in _TO_INT for o in ops):
            out.why_not = "the target has no output stage"
        out.vector_ops += [o.name for o in ops if o not in taken and o.name not in FREE_OPS]
    return out
