"""Precision experiments: the model built with IREE's demotion flags, each build traced.

Each demotion is a build variant of the workspace (workspace/variants.py),
named `demote-<kind>`, built from the workspace's imported module with the
demotion's flags (and any extra flags the user gives, checked by the
compiler before anything is recorded). Each variant is then traced against
onnxruntime dispatch by dispatch (`numerics_trace`), which gives the
per-dispatch error and the first dispatch that departs, and its outputs are
compared with the workspace's own (f32) build run by the IREE runtime on the
same inputs.

The outputs of a demoted build come from its dispatch-by-dispatch run:
IREE 3.x's `--iree-input-demote-f32-to-f16` leaves the module's ABI
declaring f32 buffers for f16 storage (`tensor<...xf32> as tensor<...xf16>`),
so the demoted module itself cannot be called; each dispatch can.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import Cancelled, StudioError
from ..run.runner import run_vmfb
from ..run.tolerance import max_error, tolerance_of
from ..workspace import trust, variants
from ..workspace.workspace import Workspace
from .numerics_trace import check_traceable, trace, trace_inputs
from .trace_report import OutputTrace, TraceReport

# The demotions IREE offers, by the name the user gives. IREE has no bf16
# demotion of the whole model; bf16 demotes the inputs of contractions.
# Contraction demotion needs its operations named: IREE's default is none.
DEMOTIONS: dict[str, tuple[str, ...]] = {
    "f16": ("--iree-input-demote-f32-to-f16",),
    "bf16": ("--iree-global-opt-demote-contraction-inputs-type=bf16",
             "--iree-global-opt-demote-contraction-inputs-operations=all"),
    "contractions-f16": ("--iree-global-opt-demote-contraction-inputs-type=f16",
                         "--iree-global-opt-demote-contraction-inputs-operations=all"),
    "i64-to-i32": ("--iree-input-demote-i64-to-i32",),
    "f64-to-f32": ("--iree-input-demote-f64-to-f32",),
}
PREFIX = "demote-"
# The narrowest float type each demotion computes in: its tolerance is the default.
DEMOTED_TYPE = {"f16": "float16", "bf16": "bfloat16", "contractions-f16": "float16", "i64-to-i32": "float32",
                "f64-to-f32": "float32"}


@dataclass
class PrecisionResult:
    demotion: str
    variant: str
    flags: list[str]
    build_seconds: float
    trace: TraceReport | None  # None when the variant could not be traced (see `error`)
    vs_f32: list[OutputTrace] = field(default_factory=list)  # its outputs against the workspace's own build
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.trace is not None and self.trace.ok and all(o.ok for o in self.vs_f32)

    def to_dict(self) -> dict:
        t = self.trace
        return {"demotion": self.demotion, "variant": self.variant, "flags": self.flags, "ok": self.ok,
                "build_seconds": self.build_seconds, "error": self.error,
                "vs_f32": [{"index": o.index, "max_abs_error": o.max_abs_error, "scale": o.scale,
                            "tolerance": o.tolerance, "ok": o.ok} for o in self.vs_f32],
                "trace": t.to_dict() if t is not None else None}


@dataclass
class PrecisionReport:
    function: str
    inputs: list[list[int]]
    results: list[PrecisionResult]
    f32_seconds: float

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def to_dict(self) -> dict:
        return {"format": "npu-studio.precision", "version": 1, "ok": self.ok, "function": self.function,
                "inputs": self.inputs, "f32_run_seconds": self.f32_seconds,
                "results": [r.to_dict() for r in self.results]}

    def summary_lines(self) -> list[str]:
        lines = [(f"precision of @{self.function}: {len(self.results)} demoted build(s), "
                  "each against the f32 build and onnxruntime")]
        for r in self.results:
            head = f"  {r.demotion:<17} ({' '.join(r.flags)}; built in {r.build_seconds:.1f} s)"
            if r.trace is None:
                lines += [head, f"    cannot trace: {r.error}"]
                continue
            lines.append(head)
            for o in r.vs_f32:
                lines.append(f"    output {o.index} vs f32 build:   max abs error {o.max_abs_error:.3g} "
                             f"(largest value {o.scale:.3g}, tolerance {o.tolerance:g}) {'ok' if o.ok else 'DIFFERS'}")
            for o in r.trace.outputs:
                lines.append(f"    output {o.index} vs onnxruntime: max abs error {o.max_abs_error:.3g} "
                             f"{'ok' if o.ok else 'DIFFERS'}")
            worst = max((d for d in r.trace.dispatches if d.paired), key=lambda d: d.max_rel_error, default=None)
            if worst is not None:
                lines.append(f"    worst dispatch #{worst.index} ({worst.onnx_tensor}): relative error "
                             f"{worst.max_rel_error:.3g}")
            first = r.trace.first_divergent
            lines.append(f"    first dispatch that departs: #{first.index} {first.symbol} ({first.onnx_tensor}, "
                         f"max abs error {first.max_abs_error:.3g}, largest value {first.scale:.3g})"
                         if first is not None else "    no dispatch departs")
        lines.append("OK" if self.ok else "DEPARTS")
        return lines


def check_demotions(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in DEMOTIONS]
    if unknown or not names:
        raise StudioError(None, f"unknown demotion {unknown[0]!r}" if unknown else "give at least one demotion"
                          + f" (known: {', '.join(DEMOTIONS)})")
    return list(dict.fromkeys(names))


def _variant(ws: Workspace, demotion: str, extra: list[str]) -> str:
    """The variant for `demotion` (re-created when its flags changed), recorded but not built."""
    name = PREFIX + demotion
    flags = [*DEMOTIONS[demotion], *extra]
    if name in ws.manifest.variants:
        if variants.get(ws, name).flags == flags:
            return name
        variants.remove(ws, name)
    variants.create(ws, name, flags)
    return name


def precision(ws: Workspace, demotions: list[str], inputs: list[np.ndarray] | None = None, *,
              extra_flags: list[str] | None = None, tolerance: float | None = None, seed: int = 0,
              on_progress: Callable[[str], None] | None = None,
              should_stop: Callable[[], bool] | None = None) -> PrecisionReport:
    """Build and trace one variant per demotion; StudioError before any build for bad input or flags."""
    demotions = check_demotions(demotions)
    trust.require(ws.root, "precision (demoted builds, run)")  # before any variant is made
    check_traceable(ws)
    sig, inputs = trace_inputs(ws, inputs, seed)
    extra = variants.parse_flags(list(extra_flags or []), ws.root)
    t0 = time.perf_counter()
    f32 = run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)
    f32_seconds = time.perf_counter() - t0
    names = [_variant(ws, d, extra) for d in demotions]  # the compiler checks the flags of all first
    results = []
    for demotion, name in zip(demotions, names):
        if should_stop is not None and should_stop():
            raise Cancelled("precision")
        if on_progress is not None:
            on_progress(f"building {name}")
        t0 = time.perf_counter()
        variants.build(ws, name)
        result = PrecisionResult(demotion, name, variants.get(ws, name).flags, time.perf_counter() - t0, None)
        if on_progress is not None:
            on_progress(f"tracing {name}")
        tol = tolerance if tolerance is not None else tolerance_of(DEMOTED_TYPE[demotion])
        try:
            result.trace = trace(ws, inputs, tolerance=tol, build=name, should_stop=should_stop)
        except Cancelled:
            raise
        except StudioError as exc:  # e.g. a demoted parameter whose archive still holds f32 data
            result.error = str(exc)
        if result.trace is not None:
            for i, (ours, ref) in enumerate(zip(result.trace.values, f32)):
                result.vs_f32.append(OutputTrace(i, *max_error(ours, ref), tol))
        results.append(result)
    return PrecisionReport(sig.name, [list(np.shape(a)) for a in inputs], results, f32_seconds)
