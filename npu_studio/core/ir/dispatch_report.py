"""Plain-text and JSON views of a PhaseIndex (the `dispatches` command)."""

from __future__ import annotations

import json

from npu_studio.core.ir.dispatch_index import DispatchRecord, PhaseIndex
from npu_studio.core.ir.linalg.requant import describe_requant
from npu_studio.core.ir.linalg import OpDescription

_CONV_ORDER = ("N", "C", "H", "W", "D", "F", "G", "KD", "KH", "KW", "OD", "OH", "OW")
_MATMUL_ORDER = ("B", "M", "N", "K")


def _dim(v: int | None) -> str:
    return "?" if v is None else str(v)


def format_dims(d: OpDescription) -> str:
    order = _MATMUL_ORDER if d.kind in ("matmul", "batch_matmul") else _CONV_ORDER
    parts = [f"{k}={_dim(d.dims[k])}" for k in order if k in d.dims]
    if d.strides:
        parts.append("stride=" + ",".join(str(s) for s in d.strides))
    if d.dilations:
        parts.append("dilation=" + ",".join(str(s) for s in d.dilations))
    if not parts:
        parts.append("loops=" + "x".join(_dim(r) for r in d.loop_ranges))
    return " ".join(parts)


def format_dispatches(index: PhaseIndex) -> str:
    """One block per dispatch:

    Dispatch #0: conv  (ONNX: Conv_0)
      op: linalg.generic (conv, fused: bias add)
      N=1 C=3 H=500 W=500 F=8 KH=3 KW=3 OH=498 OW=498 stride=1,1 dilation=1,1
      dtype: f32
    """
    blocks: list[str] = []
    for rec in index.dispatches:
        root = rec.root
        kind = rec.kind or "unknown"
        head = f"Dispatch #{rec.index}: {kind}"
        if rec.onnx_nodes:
            head += f"  (ONNX: {', '.join(rec.onnx_nodes)})"
        lines = [head]
        if root is not None:
            detail = kind
            # a fill only initialises the accumulator: not worth a mention
            shown = [f for f in rec.fused if f != "fill"]
            if shown:
                detail += f", fused: {', '.join(shown)}"
            lines.append(f"  op: {root.op_name} ({detail})")
            lines.append("  " + format_dims(root))
            lines.append(f"  dtype: {root.dtype}")
        elif rec.export or rec.executable:
            lines.append(f"  executable: {rec.export or rec.executable}")
        lines += ["  " + q for q in format_quant(rec)]
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + ("\n" if blocks else "")


def format_quant(rec: DispatchRecord) -> list[str]:
    """The dispatch's quantization in words (none for a float dispatch):

    quantized: i8 x i8 -> i32 accumulator
    requantize per-channel, bias, round half-even, zero point, clamp -128, 127, i8
      (* 0.0280652, * per-channel[16], + per-channel[16], / 0.0255082; zero point -128)
    """
    q = rec.quant
    if not q:
        return []
    lines = []
    if q["inputs"]:
        lines.append(f"quantized: {q['inputs']} -> {q['accumulator']} accumulator")
    for rq in q["requant"]:
        text = rq["scale"] and ", ".join(rq["scales"])
        if rq["zero_point_value"] is not None:
            text = (text + "; " if text else "") + f"zero point {rq['zero_point_value']:g}"
        lines.append(describe_requant(rq) + (f" ({text})" if text else ""))
    return lines


def to_json(index: PhaseIndex) -> str:
    """The index as JSON; schema in docs/dispatch-index.schema.json."""
    return json.dumps(index.to_json(), indent=2)
