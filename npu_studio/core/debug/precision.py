"""Precision experiments: the model built with IREE's demotion flags, each build run and traced.

Each demotion is a build variant of the workspace (workspace/variants.py),
named `demote-<kind>`, built from the workspace's imported module with the
demotion's flags (and any extra flags the user gives, checked by the
compiler before anything is recorded). A variant whose parameters are
demoted gets its own converted parameter archive (compile/param_convert).

Each built variant is then run whole by IREE's runtime, as a caller would
run it (inputs in the element types its entry point asserts), and its
outputs are compared with the workspace's own (f32) build on the same
inputs; and it is traced against onnxruntime dispatch by dispatch
(`numerics_trace`), which gives each dispatch's error and the first
dispatch that departs.

A variant iree-compile fails on, or whose module IREE's runtime refuses,
is reported as that (precision_report: IREE's first error line, the flags,
the crash reproducer kept in `variants/NAME/`). In IREE 3.13,
`--iree-input-demote-f32-to-f16` fails to link Softmax and LayerNorm
(`undefined symbol: fmaxf`), and its async entry point declares f32
buffers for f16 storage (`tensor<...xf32> as tensor<...xf16>`): the
runtime refuses its results ("buffer view byte length ... exceeds backing
buffer"). The dispatches of such a module still run, so its trace is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import Cancelled, CompileFailed, RunFailed, StudioError
from ..run.runner import run_vmfb
from ..run.signature import public_functions
from ..run.tolerance import max_error, tolerance_of
from ..workspace import trust, variants
from ..workspace.workspace import Workspace
from .dispatch_break import SYNC_ENTRY
from .numerics_trace import build_inputs, check_traceable, trace, trace_inputs
from .precision_report import IreeFailure, PrecisionReport, PrecisionResult
from .trace_report import OutputTrace

# The demotions IREE offers, by the name the user gives. IREE has no bf16
# demotion of the whole model; bf16 demotes the inputs of contractions.
# Contraction demotion needs its operations named: IREE's default is none.
# f16 demotes the whole model, its entry point included: IREE 3.13's async entry point then declares f32
# buffer views over f16 storage and its runtime refuses every result ("exceeds backing buffer"); the sync
# entry point takes and returns f16 and runs. So f16 builds the sync one (the trace's own breaks do too).
DEMOTIONS: dict[str, tuple[str, ...]] = {
    "f16": ("--iree-input-demote-f32-to-f16", SYNC_ENTRY),
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
        tol = tolerance if tolerance is not None else tolerance_of(DEMOTED_TYPE[demotion])
        results.append(_try(ws, demotion, name, sig.name, inputs, f32, tol, on_progress, should_stop))
    return PrecisionReport(sig.name, [list(np.shape(a)) for a in inputs], results, f32_seconds)


def _try(ws: Workspace, demotion: str, name: str, function: str, inputs: list[np.ndarray],
         f32: list[np.ndarray], tol: float, on_progress, should_stop) -> PrecisionResult:
    """Build, run and trace one variant; what IREE cannot build or run is the result, not an error."""
    flags = variants.get(ws, name).flags
    if on_progress is not None:
        on_progress(f"building {name}")
    t0 = time.perf_counter()
    try:
        variants.build(ws, name)
    except CompileFailed as exc:
        result = PrecisionResult(demotion, name, flags, time.perf_counter() - t0, None)
        result.failure = IreeFailure("build", first_error_line(exc), flags, _relative(ws, exc.reproducer))
        return result
    result = PrecisionResult(demotion, name, flags, time.perf_counter() - t0, None)
    b = variants.resolve(ws, name)
    if on_progress is not None:
        on_progress(f"running {name}")
    outputs = None
    try:
        outputs = run_vmfb(b.vmfb_path, function, called_inputs(b, function, inputs), parameters=b.params_path)
        result.ran = True
    except RunFailed as exc:
        result.failure = IreeFailure("run", exc.reason, flags)
    if on_progress is not None:
        on_progress(f"tracing {name}")
    try:
        result.trace = trace(ws, inputs, tolerance=tol, build=name,
                             should_stop=should_stop)
    except Cancelled:
        raise
    except StudioError as exc:  # e.g. a host operation the dispatch-by-dispatch run cannot interpret
        result.error = str(exc)
    if outputs is None and result.trace is not None:
        outputs = result.trace.values
    for i, (ours, ref) in enumerate(zip(outputs or [], f32)):
        result.vs_f32.append(OutputTrace(i, *max_error(np.asarray(ours), ref), tol))
    return result


def called_inputs(b: variants.Build, function: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """`inputs` in the element types `b`'s entry point asserts of its caller's buffers."""
    sig = next((s for s in public_functions(b.snapshot_path("input"), as_called=True) if s.name == function), None)
    if sig is None:  # the trace names the problem
        return build_inputs(b, function, inputs)
    return [np.asarray(a).astype(spec.numpy_dtype, copy=False) for a, spec in zip(inputs, sig.inputs)]


def first_error_line(exc: CompileFailed) -> str:
    """iree-compile's first `error:` line, as it printed it (its reason, without our reproducer note)."""
    for line in exc.log.splitlines():
        if "error:" in line:
            return line.strip()
    return exc.reason


def _relative(ws: Workspace, path: Path | None) -> str | None:
    if path is None:
        return None
    path = Path(path)
    return str(path.relative_to(ws.root)) if path.is_relative_to(ws.root) else str(path)
