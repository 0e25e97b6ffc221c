"""The MAC array's output stage: requantization in hardware, and which epilogue ops it takes.

An int8 NPU drains its i32 accumulators through a fixed-function stage:
convert to float, multiply by a scale (one per tensor or one per output
channel), round, add the output zero point, clamp (which also does a
ReLU), narrow to i8/u8/i16. IREE fuses exactly that chain after an
`i8 x i8 -> i32` convolution or contraction (a QDQ model's requantize):

    sitofp i32 -> mulf/divf scale, addf bias ... -> math.roundeven -> addf zp
        -> maxnumf lo -> minnumf hi -> fptosi to i8

`split_epilogue` walks the bodies of the ops fused after a MAC op and
finds such chains (`ir/linalg/requant.find_chain`), backwards from each
narrowing `fptosi`/`fptoui`, one op at a time, for as long as the
target's stage can do the op. The ops
it takes cost no vector-unit cycles (the stage is pipelined with the
array's drain); every other op of the epilogue runs on the vector unit.
When a chain stops early the reason is kept (`why_not`), so a fallback
can say which part of the epilogue the stage could not take.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ...lazy_import import lazy_module

from ...ir.linalg.requant import (
    FREE_OPS,
    ROUND_OP_MODE,
    TO_INT,
    Requantization,
    body_ops,
    find_chain,
)

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

__all__ = [
    "FREE_OPS",
    "ROUND_OP_MODE",
    "EpilogueSplit",
    "OutputStage",
    "Requantization",
    "body_ops",
    "split_epilogue",
    "vector_work",
]

SCALE_MODES = ("per-tensor", "per-channel")
# half-even: IEEE roundTiesToEven (math.roundeven, what ONNX QuantizeLinear
# does); half-away: ties away from zero (math.round); truncate: toward zero.
ROUNDING_MODES = ("half-even", "half-away", "truncate")
NARROW_TYPES = ("i8", "ui8", "i16")


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
    def from_dict(cls, d: dict[str, Any] | None) -> OutputStage:
        d = dict(d or {})
        d["scale"] = tuple(d.get("scale", ()))
        d["narrow"] = tuple(d.get("narrow", ()))
        return cls(**d)


@dataclass
class EpilogueSplit:
    vector_ops: list[str] = field(default_factory=list)  # body ops left to the vector unit
    requant: list[Requantization] = field(default_factory=list)
    stage_ops: list[ir.Operation] = field(default_factory=list)  # body ops the output stage computes
    why_not: str = ""  # why a chain stopped before taking a round or a narrowing cast


def vector_work(op: ir.Operation) -> list[str]:
    """Names of the body ops the vector unit computes (int<->float casts included)."""
    return [o.name for o in body_ops(op) if o.name not in FREE_OPS]


def split_epilogue(fused: list[ir.Operation], stage: OutputStage) -> EpilogueSplit:
    """Which body ops of the ops fused after a MAC op the output stage takes."""
    out = EpilogueSplit()
    for generic in fused:
        ops = body_ops(generic)
        block = set(ops)
        taken: set = set()
        found = []  # (body position of the narrowing cast, chain)
        if stage.present:
            # backwards: a later chain claims its ops before an earlier one that feeds it is walked
            for pos in reversed(range(len(ops))):
                op = ops[pos]
                if op.name in TO_INT and op not in taken:
                    rq, chain, why = find_chain(op, generic, block, stage)
                    if rq is not None:
                        found.append((pos, rq))
                        taken.update(chain)
                        out.stage_ops += chain
                    elif why and not out.why_not:
                        out.why_not = why
        elif any(o.name in TO_INT for o in ops):
            out.why_not = "the target has no output stage"
        out.requant += [rq for _, rq in sorted(found, key=lambda f: f[0])]  # reported in body order
        out.vector_ops += [o.name for o in ops if o not in taken and o.name not in FREE_OPS]
    return out
