"""The numerics trace's report: per dispatch against the ONNX model, the first divergent one, as text and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..lazy_import import lazy_module
from ..textio import write_text_atomic

np = lazy_module("numpy")  # loaded on first use: not at the app's start

FORMAT = "npu-studio.trace"
FIRST_DIFFERING = 5  # elements listed per departing dispatch
HISTOGRAM_BINS = 32


@dataclass
class DispatchTrace:
    index: int
    symbol: str
    shape: list[int]
    dtype: str
    onnx_nodes: list[str] = field(default_factory=list)
    onnx_tensor: str | None = None  # None: not paired (see why_unpaired)
    onnx_node: str | None = None
    padded: bool = False  # the result is the tensor with padding around it (compared on the interior)
    why_unpaired: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None  # max_abs_error / scale
    scale: float | None = None  # largest finite |ONNX value|
    tolerance: float | None = None
    outside: int | None = None  # elements with |IREE - ONNX| > tolerance * max(1, scale)
    departs: bool = False
    inputs_agree: bool | None = None  # None: an input comes through an unpaired dispatch
    producers: list[int] = field(default_factory=list)
    first_differing: list[dict] = field(default_factory=list)  # {"index", "iree", "onnx"}
    stats: dict = field(default_factory=dict)  # min, max, mean of IREE's result
    histogram: dict = field(default_factory=dict)  # {"edges", "counts"} of IREE's finite result values
    seconds: float = 0.0

    @property
    def paired(self) -> bool:
        return self.onnx_tensor is not None


@dataclass
class OutputTrace:
    index: int
    max_abs_error: float
    scale: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.max_abs_error <= self.tolerance * max(1.0, self.scale)


@dataclass
class TraceReport:
    workspace: str
    function: str
    inputs: list[list[int]]
    tolerance: float | None  # None: by element type
    dispatches: list[DispatchTrace]
    outputs: list[OutputTrace]
    onnxruntime_seconds: float
    build_seconds: float
    iree_seconds: float
    notes: list[str] = field(default_factory=list)
    values: list = field(default_factory=list, repr=False)  # the build's outputs (arrays; not in to_dict)
    # With substitutions: the workspace's build run as it is, against onnxruntime.
    whole_build: list[OutputTrace] = field(default_factory=list)

    @property
    def first_divergent(self) -> DispatchTrace | None:
        return next((d for d in self.dispatches if d.departs), None)

    @property
    def paired(self) -> int:
        return sum(1 for d in self.dispatches if d.paired)

    @property
    def ok(self) -> bool:
        return self.first_divergent is None and all(o.ok for o in (*self.outputs, *self.whole_build))

    def unpaired_upstream(self, d: DispatchTrace) -> list[int]:
        """Unpaired dispatches that feed `d`, directly or through other unpaired ones."""
        by_index = {t.index: t for t in self.dispatches}
        found, stack = [], list(d.producers)
        while stack:
            p = by_index.get(stack.pop())
            if p is None or p.paired or p.index in found:
                continue
            found.append(p.index)
            stack.extend(p.producers)
        return sorted(found)

    def to_dict(self) -> dict:
        first = self.first_divergent
        return {
            "format": FORMAT, "version": 1, "ok": self.ok, "workspace": self.workspace,
            "function": self.function, "inputs": self.inputs, "tolerance": self.tolerance,
            "first_divergent": None if first is None else first.index,
            "paired": self.paired,
            "dispatches": [asdict(d) for d in self.dispatches],
            "outputs": [{**asdict(o), "ok": o.ok} for o in self.outputs],
            "whole_build": [{**asdict(o), "ok": o.ok} for o in self.whole_build],
            "notes": list(self.notes),
            "seconds": {"onnxruntime": self.onnxruntime_seconds, "dispatch_module_build": self.build_seconds,
                        "iree": self.iree_seconds},
        }

    def save_json(self, path: Path) -> None:
        """Write `to_dict()` atomically."""
        path = Path(path)
        write_text_atomic(path, json.dumps(self.to_dict(), indent=1))

    def summary_lines(self) -> list[str]:
        n = len(self.dispatches)
        tol = "by element type" if self.tolerance is None else f"{self.tolerance:g}"
        lines = [(f"trace of @{self.function} against the ONNX model: {n} dispatches, {self.paired} paired with "
                  f"an ONNX tensor (tolerance {tol}, relative to each tensor's largest value)")]
        lines.append(f"  {'#':>4}  {'ONNX tensor':<24} {'max abs':>10} {'max rel':>10} {'outside':>9}  "
                     f"{'':<8} dispatch")
        for d in self.dispatches:
            if d.paired:
                state = "DEPARTS" if d.departs else "ok"
                lines.append(f"  {d.index:>4}  {_cut(d.onnx_tensor, 24):<24} {d.max_abs_error:>10.3g} "
                             f"{d.max_rel_error:>10.3g} {d.outside:>9}  {state:<8} {d.symbol}")
            else:
                lines.append(f"  {d.index:>4}  {'-':<24} {'':>10} {'':>10} {'':>9}  {'unpaired':<8} {d.symbol}"
                             f" ({d.why_unpaired})")
        for o in self.outputs:
            lines.append(f"  output {o.index} vs onnxruntime: max abs error {o.max_abs_error:.3g} "
                         f"(largest value {o.scale:.3g}) {'ok' if o.ok else 'DIFFERS'}")
        for o in self.whole_build:
            lines.append(f"  output {o.index} of the build as it is (with its substitutions) vs onnxruntime: "
                         f"max abs error {o.max_abs_error:.3g} {'ok' if o.ok else 'DIFFERS'}")
        first = self.first_divergent
        if first is not None:
            lines.append(f"  first divergent dispatch: #{first.index} {first.symbol}: its result departs from "
                         f"ONNX tensor {first.onnx_tensor!r} (node {first.onnx_node}) by {first.max_abs_error:.3g} "
                         f"(largest value {first.scale:.3g})")
            via = self.unpaired_upstream(first)
            if via:
                lines.append(f"  note: its inputs come through unpaired dispatch(es) "
                             f"{', '.join(f'#{i}' for i in via)}: the error may be born there")
            later = [d.index for d in self.dispatches if d.departs and d is not first]
            if later:
                lines.append(f"  also departing after it: {', '.join(f'#{i}' for i in later[:20])}"
                             + (" ..." if len(later) > 20 else ""))
        lines += [f"  note: {n}" for n in self.notes]
        lines.append("OK" if self.ok else "DEPARTS")
        return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]


def first_differing(result, reference, bound: float) -> tuple[int, list[dict]]:
    """(how many elements are outside `bound`, the first few of them in row-major order)."""
    a = np.asarray(result, np.float64).ravel()
    b = np.asarray(reference, np.float64).ravel()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        outside = ~same & ~(np.abs(a - b) <= bound)  # NaN against a number is outside
    where = np.flatnonzero(outside)
    shape = np.shape(result)
    first = [{"index": [int(i) for i in np.unravel_index(k, shape)] if shape else [], "iree": float(a[k]),
              "onnx": float(b[k])} for k in where[:FIRST_DIFFERING]]
    return int(where.size), first
