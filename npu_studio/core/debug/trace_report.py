"""The numerics trace's report: per dispatch against the ONNX model, where the error is born, as text and JSON.

Where the error is born (`TraceReport.locate`): the first dispatch, in
execution order, whose result departs while every input it reads agrees:
each producing dispatch is paired and within tolerance (model inputs and
constants agree by definition; a producer that wrote only part of its buffer
vouches for that part, the rest is vouched for by the dispatches that wrote it).
An unpaired dispatch judged against the compiler's own dispatch on the same
inputs (an edited or substituted build: `compiler_reference`) departs or
agrees like a paired one, but agreeing says only that it is right if what it
reads is right, so its own producers are checked in turn. A departing
dispatch that reads an unjudged dispatch (or a partial one) cannot be told
from the dispatches upstream of it that have no reference; if no dispatch can be named the verdict is
"cannot locate: <reason>" (the dispatches the error may be born in, or the
substitution the trace ran without), never a guess.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..lazy_import import lazy_module
from ..run.tolerance import weighted_errors
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
    padded: bool = False  # the dispatch writes only part of its result (compared where it wrote)
    via: str = ""  # how the ONNX tensor is moved into the result's layout ("" when as it is)
    why_unpaired: str = ""
    partial_at: int | None = None  # it holds part of an ONNX op that this dispatch completes
    # Unpaired, but judged against the compiler's own dispatch of this number on the same inputs
    # (the traced build was edited or substituted: compiler_reference); None: not so judged.
    compiler_dispatch: int | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None  # max_abs_error / scale
    scale: float | None = None  # largest finite |ONNX value|
    tolerance: float | None = None
    atol: float = 0.0  # absolute part of the bound (one step for floats rounded to integers)
    computed_in: str = ""  # the element type the tolerance comes from
    outside: int | None = None  # elements with |IREE - ONNX| > tolerance * max(1, scale) + atol
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

    @property
    def judged(self) -> bool:
        """Compared with a reference: an ONNX tensor or the compiler's own dispatch."""
        return self.paired or self.compiler_dispatch is not None

    @property
    def judged_by(self) -> str:
        if self.paired:
            return f"ONNX tensor {self.onnx_tensor!r}"
        return "" if self.compiler_dispatch is None else f"the compiler's own dispatch #{self.compiler_dispatch}"


@dataclass
class OutputTrace:
    index: int
    max_abs_error: float
    scale: float
    tolerance: float
    atol: float = 0.0
    computed_in: str = ""

    @property
    def ok(self) -> bool:
        return self.max_abs_error <= self.tolerance * max(1.0, self.scale) + self.atol


@dataclass
class Verdict:
    """Where the error is born: a dispatch, or why none can be named (`reason`, "" when nothing departs)."""

    dispatch: int | None
    reason: str = ""
    notes: list[str] = field(default_factory=list)


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
    left_out: list[str] = field(default_factory=list)  # substitutions the traced build is without, and why

    @property
    def first_divergent(self) -> DispatchTrace | None:
        """The dispatch the error is born in, when the evidence names one."""
        found = self.locate().dispatch
        return None if found is None else self._by_index()[found]

    @property
    def paired(self) -> int:
        return sum(1 for d in self.dispatches if d.paired)

    @property
    def judged_by_compiler(self) -> int:
        return sum(1 for d in self.dispatches if not d.paired and d.compiler_dispatch is not None)

    @property
    def outputs_depart(self) -> bool:
        return not all(o.ok for o in (*self.outputs, *self.whole_build))

    @property
    def ok(self) -> bool:
        return not self.outputs_depart and not self.left_out and not any(d.departs for d in self.dispatches)

    @property
    def exit_code(self) -> int:
        """1 when a dispatch is named or the outputs depart; 0 otherwise (a "cannot locate" included)."""
        return 1 if self.outputs_depart or self.locate().dispatch is not None else 0

    def _by_index(self) -> dict[int, DispatchTrace]:
        return {d.index: d for d in self.dispatches}

    def _unknown_inputs(self, d: DispatchTrace) -> list[int] | None:
        """The unjudged dispatches `d` reads (through other unpaired ones); None when a judged input departs."""
        by_index = self._by_index()
        found, stack, seen = [], list(d.producers), set()
        while stack:
            p = by_index.get(stack.pop())
            if p is None or p.index in seen:
                continue
            seen.add(p.index)
            if p.judged and p.departs:
                return None
            if p.paired:
                if p.padded:  # checked where it wrote; the rest of its buffer is what its producers wrote
                    stack.extend(p.producers)
                continue
            if p.compiler_dispatch is not None:  # right if what it reads is right: that is checked in turn
                stack.extend(p.producers)
                continue
            found.append(p.index)
            stack.extend(p.producers)
        return sorted(found)

    def locate(self) -> Verdict:
        """Where the error is born (see the module's docstring)."""
        if self.left_out:
            names = "; ".join(self.left_out)
            return Verdict(None, f"cannot locate: the traced build is without a substitution ({names}); "
                                 "what it ran is not the build")
        unknown_first: tuple[DispatchTrace, list[int]] | None = None
        for d in self.dispatches:
            if not d.departs:
                continue
            unknown = self._unknown_inputs(d)
            if unknown == []:
                notes = []
                if unknown_first is not None:
                    notes.append(f"#{unknown_first[0].index} departs earlier, but it reads unpaired "
                                 f"{_list(unknown_first[1])}")
                return Verdict(d.index, "", notes)
            if unknown and unknown_first is None:
                unknown_first = (d, unknown)
        if unknown_first is not None:
            d, unknown = unknown_first
            by_index = self._by_index()
            why = "; ".join(f"#{i}: {by_index[i].why_unpaired}" for i in unknown[:3])
            return Verdict(None, f"cannot locate: #{d.index} departs, but it reads {_list(unknown)}, which "
                                 f"{'has' if len(unknown) == 1 else 'have'} no ONNX counterpart ({why}); "
                                 f"the error is born in one of "
                                 f"{_list([*unknown, d.index])}")
        if self.outputs_depart:
            unpaired = [d.index for d in self.dispatches if not d.judged]
            return Verdict(None, "cannot locate: the outputs depart but no compared dispatch does"
                                 + (f"; not compared: {_list(unpaired)}" if unpaired else ""))
        return Verdict(None, "")

    def to_dict(self) -> dict:
        first = self.first_divergent
        return {
            "format": FORMAT, "version": 1, "ok": self.ok, "workspace": self.workspace,
            "function": self.function, "inputs": self.inputs, "tolerance": self.tolerance,
            "first_divergent": None if first is None else first.index,
            "cannot_locate": self.locate().reason, "left_out": list(self.left_out),
            "paired": self.paired, "judged_by_compiler": self.judged_by_compiler,
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
                  f"an ONNX tensor (tolerance {tol}, relative to each tensor's largest value)"
                  + (f", {self.judged_by_compiler} unpaired judged against the compiler's own dispatch"
                     if self.judged_by_compiler else ""))]
        lines.append(f"  {'#':>4}  {'ONNX tensor':<24} {'max abs':>10} {'max rel':>10} {'outside':>9}  "
                     f"{'':<8} dispatch")
        for d in self.dispatches:
            if d.paired:
                state = "DEPARTS" if d.departs else "ok"
                how = f" [{d.via}]" if d.via else ""
                lines.append(f"  {d.index:>4}  {_cut(d.onnx_tensor, 24):<24} {d.max_abs_error:>10.3g} "
                             f"{d.max_rel_error:>10.3g} {d.outside:>9}  {state:<8} {d.symbol}{how}"
                             f" (tolerance {d.tolerance:g}{f' + {d.atol:g}' if d.atol else ''}, {d.computed_in})")
            elif d.compiler_dispatch is not None:
                state = "DEPARTS" if d.departs else "ok"
                lines.append(f"  {d.index:>4}  {_cut(f'compiler #{d.compiler_dispatch}', 24):<24} "
                             f"{d.max_abs_error:>10.3g} {d.max_rel_error:>10.3g} {d.outside:>9}  {state:<8} "
                             f"{d.symbol} (vs the compiler's own dispatch on the same inputs, tolerance "
                             f"{d.tolerance:g}{f' + {d.atol:g}' if d.atol else ''}, {d.computed_in}; "
                             f"{d.why_unpaired})")
            else:
                state = "partial" if d.partial_at is not None else "unpaired"
                lines.append(f"  {d.index:>4}  {'-':<24} {'':>10} {'':>10} {'':>9}  {state:<8} {d.symbol}"
                             f" ({d.why_unpaired})")
        for o in self.outputs:
            lines.append(f"  output {o.index} vs onnxruntime: max abs error {o.max_abs_error:.3g} "
                         f"(largest value {o.scale:.3g}, tolerance {o.tolerance:g}, {o.computed_in}) "
                         f"{'ok' if o.ok else 'DIFFERS'}")
        for o in self.whole_build:
            lines.append(f"  output {o.index} of the build as it is (with its substitutions) vs onnxruntime: "
                         f"max abs error {o.max_abs_error:.3g} {'ok' if o.ok else 'DIFFERS'}")
        verdict = self.locate()
        first = None if verdict.dispatch is None else self._by_index()[verdict.dispatch]
        if first is not None:
            against = f"ONNX tensor {first.onnx_tensor!r} (node {first.onnx_node})" if first.paired else \
                f"the compiler's own dispatch #{first.compiler_dispatch} on the same inputs"
            lines.append(f"  first divergent dispatch: #{first.index} {first.symbol}: its result departs from "
                         f"{against} by {first.max_abs_error:.3g} "
                         f"(largest value {first.scale:.3g}) while every input it reads agrees")
            later = [d.index for d in self.dispatches if d.departs and d is not first]
            if later:
                lines.append(f"  also departing: {', '.join(f'#{i}' for i in later[:20])}"
                             + (" ..." if len(later) > 20 else ""))
        elif verdict.reason:
            lines.append(f"  {verdict.reason}")
        lines += [f"  note: {n}" for n in verdict.notes]
        lines += [f"  note: {n}" for n in self.notes]
        lines.append("OK" if self.ok else "DEPARTS" if self.exit_code else "CANNOT LOCATE")
        return lines


def _list(indexes) -> str:
    return ", ".join(f"#{i}" for i in indexes)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]


def first_differing(result, reference, bound: float) -> tuple[int, list[dict]]:
    """(how many elements are outside `bound`, the first few of them in row-major order)."""
    a = np.asarray(result, np.float64).ravel()
    b = np.asarray(reference, np.float64).ravel()
    where = np.flatnonzero(weighted_errors(a, b) > bound)  # NaN against a number is inf: outside
    shape = np.shape(result)
    first = [{"index": [int(i) for i in np.unravel_index(k, shape)] if shape else [], "iree": float(a[k]),
              "onnx": float(b[k])} for k in where[:FIRST_DIFFERING]]
    return int(where.size), first
