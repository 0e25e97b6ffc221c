"""The numerics trace: each dispatch of a build against the ONNX model, and where the error is born.

onnxruntime runs the model with the tensors the dispatches compute exposed
as extra outputs (`run/onnx_reference`). IREE runs the build's flow program
dispatch by dispatch: the host side interpreted, each dispatch run by the
one-function-per-dispatch module (`run/dispatches`), built from the flow
snapshot, so a flow edit is traced. The other method, IREE's own dispatch
tensor tracing (`run/dispatches/tensor_trace`), compiles the build again
from dispatch-creation with `--iree-flow-trace-dispatch-tensors` and
records what the whole module computes.

Executable substitutions are in both: a substituted `hal.executable`
carries the buffer offsets of the build it came from
(`hal.interface.binding.subspan ... offset(%c512)`), so before the
dispatch module or the traced build is compiled each substitution is fitted
to that build's own layout (`executables/rebase`); one that cannot be
fitted is left out, and then the trace cannot locate anything (it ran
without it) and says so, naming it. With substitutions the report also
compares the workspace's own build, run as it is, with onnxruntime.

Each dispatch result is paired with the ONNX tensor it provably holds, in
its layout (`run/flow_pairing`, `run/onnx_pairing`), and compared within
the tolerance its arithmetic allows (`run/tolerance`). Where the error is
born is decided in the report (`trace_report.locate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from iree.compiler import ir

from ..compile.params import ParameterArchive
from ..errors import Cancelled, StudioError
from ..executables.rebase import substitution_flags
from ..ir.context import mlir_context
from ..ir.dispatch_index import index_workspace_phases
from ..run.dispatches import iree_dispatches, tensor_trace
from ..run.dispatches.host import HostInterpreter
from ..run.dispatches.scalar_ops import NotInterpretable
from ..run.onnx_reference import imported_model, run_with_intermediates
from ..run.runner import pick_function, random_inputs, run_vmfb
from ..run.tolerance import Tolerance, arithmetic_tolerance, max_error, upstream_types
from ..workspace import trust, variants
from ..workspace.workspace import Workspace
from ..run.flow_pairing import FlowPairing
from ..run.onnx_pairing import Pairing
from .compiler_reference import CompilerReference
from .trace_report import (
    HISTOGRAM_BINS,
    DispatchTrace,
    OutputTrace,
    TraceReport,
    first_differing,
)

ProgressFn = Callable[[int, int], None]  # (dispatches done, dispatches in all)
DISPATCHES, TENSOR_TRACE = "dispatches", "tensor-trace"
METHODS = (DISPATCHES, TENSOR_TRACE)


def check_traceable(ws: Workspace, build: str = variants.MAIN) -> variants.Build:
    """The build to trace; StudioError (one line) when there is nothing to trace against the ONNX model."""
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no build; compile first")
    b = variants.resolve(ws, build)
    for phase in ("input", "flow"):
        path = b.snapshot_path(phase)
        if path is None or not path.is_file():
            raise StudioError(ws.root, f"no {phase} snapshot in build {build!r}; compile first")
    if ws.source_path.suffix.lower() != ".onnx":
        raise StudioError(ws.source_path, "the trace compares with the ONNX model, and this workspace was "
                                          "made from an MLIR file")
    return b


def trace_inputs(ws: Workspace, inputs: list[np.ndarray] | None, seed: int = 0,
                 function: str | None = None):
    """(signature, inputs): `inputs` checked against the entry point, or seeded random ones."""
    sig = pick_function(ws.snapshot_path("input"), function)
    if any(d is None for spec in sig.inputs for d in spec.shape):
        raise StudioError(ws.root, f"@{sig.name} has dynamic input shapes; the trace needs static ones")
    if inputs is None:
        return sig, random_inputs(sig, seed, ws.user_model_path)
    if len(inputs) != len(sig.inputs):
        raise StudioError(ws.root, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(inputs)}")
    for i, (a, spec) in enumerate(zip(inputs, sig.inputs)):
        if a.shape != tuple(spec.shape) or a.dtype != spec.numpy_dtype:
            raise StudioError(ws.root, f"input {i} of @{sig.name} must be {spec}, got "
                                       f"{'x'.join(map(str, a.shape))} {a.dtype}")
    return sig, inputs


def flow_index(b: variants.Build):
    """The flow phase's dispatch index of build `b` (dispatch-creation names each site's nodes)."""
    phases = {p: b.snapshot_path(p) for p in ("dispatch-creation", "flow")
              if b.snapshot_path(p) is not None and b.snapshot_path(p).is_file()}
    return index_workspace_phases(phases)["flow"]


def flow_records(b: variants.Build):
    return flow_index(b).dispatches


def reference_values(pairing: FlowPairing, model, inputs, source) -> tuple[list, dict]:
    """onnxruntime's outputs and every tensor the pairing may need (model inputs included)."""
    outs, reference = run_with_intermediates(model, inputs, pairing.wanted(), source)
    reference = {**dict(zip(pairing.graph.graph_inputs, inputs)), **reference}
    pairing.set_reference(reference)
    return outs, reference


def output_tolerance(records, output, tolerance: float | None) -> Tolerance:
    """The rule for a model output: everything the build computes may have gone into it."""
    if tolerance is not None:
        return Tolerance(tolerance, 0.0, "given")
    types = set().union(*upstream_types(records).values()) if records else set()
    return arithmetic_tolerance(types, np.asarray(output).dtype)


def trace(ws: Workspace, inputs: list[np.ndarray] | None = None, *, tolerance: float | None = None,
          seed: int = 0, function: str | None = None, on_progress: ProgressFn | None = None,
          should_stop: Callable[[], bool] | None = None, build: str = variants.MAIN,
          method: str = DISPATCHES) -> TraceReport:
    """Trace `ws`'s build (`main`, or a build variant) against its ONNX model on `inputs`.

    `inputs` (default: seeded random ones) fit the model's own entry point;
    a variant whose entry point takes other element types (a demoted one)
    gets them converted.

    `tolerance` is relative to each reference tensor's largest magnitude
    (None: by element type, see run/tolerance). `method`: "dispatches"
    (the one-function-per-dispatch module, built once per flow snapshot and
    cached in the workspace beside the NPU check's) or "tensor-trace" (the
    build compiled again with IREE's dispatch tensor tracing, cached too). Raises StudioError (one line) for a
    workspace without a build, inputs that do not fit the entry point, a
    dispatch module that does not compile; Cancelled when `should_stop`.
    """
    b = check_traceable(ws, build)
    trust.require(ws.root, "trace (the build and IREE's build of each dispatch, run)")  # before any cache write
    if tolerance is not None and not (tolerance >= 0 and np.isfinite(tolerance)):
        raise StudioError(None, f"the tolerance must be a finite number >= 0, got {tolerance}")
    sig, inputs = trace_inputs(ws, inputs, seed, function)
    model = imported_model(ws.source_path)
    phase_index = flow_index(b)
    records = phase_index.dispatches
    pairing = FlowPairing(b.snapshot_path("flow"), phase_index, model)
    types = upstream_types(records)
    t0 = time.perf_counter()
    ort_outputs, reference = reference_values(pairing, model, inputs, ws.source_path)
    ort_seconds = time.perf_counter() - t0
    iree_inputs = build_inputs(b, sig.name, inputs)
    substituted = _substituted(ws)
    if method not in METHODS:
        raise StudioError(None, f"unknown trace method {method!r} (known: {', '.join(METHODS)})")
    use_tracing = method == TENSOR_TRACE
    traces: list[DispatchTrace] = []

    def judge(index: int, results: list[np.ndarray], seconds: float) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("trace")
        rec = records[index] if index < len(records) else None
        pairings = pairing.pair(index, results)
        traces.append(compare(index, rec, results, pairings, reference, tolerance, seconds, types.get(index, set())))
        if on_progress is not None:
            on_progress(len(traces), len(records))

    if use_tracing:
        outs, build_seconds, iree_seconds, build_notes = _run_tensor_trace(ws, b, sig.name, iree_inputs,
                                                                           records, judge)
        compiler = None
    else:
        with CompilerReference(ws, b, substituted) as compiler:
            outs, build_seconds, iree_seconds, build_notes = _run_dispatch_module(
                ws, b, sig.name, iree_inputs, records, judge, compiler)
            build_seconds += compiler.build_seconds
    mark_partial(traces, pairing.partial())
    if compiler is not None and compiler.why:
        build_notes = [*build_notes, judge_by_compiler(traces, compiler)]
    _mark_inputs(traces, records)
    values = [np.asarray(o) for o in outs if o is not None]
    outputs = [_output_trace(i, o, r, records, tolerance) for i, (o, r) in enumerate(zip(values, ort_outputs))]
    notes = [f"build variant {build!r}"] if build != variants.MAIN else []
    if use_tracing:
        notes.append("IREE side: the build compiled again from dispatch-creation with dispatch tensor tracing; "
                     "an edit of the flow snapshot is not in it")
    whole: list[OutputTrace] = []
    notes += build_notes
    if substituted:
        notes.append("the build as it is (" + ", ".join(substituted) + " substituted) is compared with "
                     "onnxruntime below")
        built = run_vmfb(b.vmfb_path, sig.name, iree_inputs, parameters=b.params_path)
        whole = [_output_trace(i, o, r, records, tolerance) for i, (o, r) in enumerate(zip(built, ort_outputs))]
    left_out = [n for n in build_notes if "is left out of" in n]
    return TraceReport(str(ws.root), sig.name, [list(np.shape(a)) for a in inputs], tolerance, traces, outputs,
                       ort_seconds, build_seconds, iree_seconds, notes, values, whole, left_out)


def _output_trace(i: int, value, reference, records, tolerance: float | None) -> OutputTrace:
    rule = output_tolerance(records, value, tolerance)
    return OutputTrace(i, *max_error(value, reference), rule.relative, rule.absolute, rule.computed_in)


def mark_partial(traces: list[DispatchTrace], partial: dict[int, int]) -> None:
    """Dispatches holding part of an ONNX op: compared at the dispatch that completes it, not here."""
    for t in traces:
        if t.index in partial:
            t.partial_at = partial[t.index]
            t.why_unpaired = f"partial: compared at #{partial[t.index]}"
            t.onnx_tensor = t.onnx_node = None
            t.departs = False


def _substitution_flags(ws: Workspace, b: variants.Build) -> list[str]:
    return [f for f in variants.options_for(ws, b.name).extra_flags if substitution_flags([f])]


def judge_by_compiler(traces: list[DispatchTrace], compiler: CompilerReference) -> str:
    """Every unpaired (or partial) dispatch judged against the compiler's own, where it ran; the note."""
    judged = 0
    for t in traces:
        if t.paired:
            continue
        j = compiler.judgements.get(t.index, compiler.reason or "it was not run")
        if isinstance(j, str):
            t.why_unpaired += f"; not judged against the compiler's own dispatch: {j}"
            continue
        judged += 1
        t.compiler_dispatch = j.dispatch
        t.max_abs_error, t.scale, t.departs = j.max_abs_error, j.scale, j.departs
        t.max_rel_error = j.max_abs_error / j.scale if j.scale else (0.0 if j.max_abs_error == 0 else float("inf"))
        t.tolerance, t.atol, t.computed_in = j.rule.relative, j.rule.absolute, j.rule.computed_in
        t.outside, t.first_differing = j.outside, j.first_differing
    if not compiler.available:
        return f"{compiler.why}: no dispatch is judged against the compiler's own ({compiler.reason})"
    return (f"{compiler.why}: {judged} unpaired dispatch{'es' if judged != 1 else ''} judged against the "
            "compiler's own dispatch module on the same inputs")


def _run_dispatch_module(ws: Workspace, b: variants.Build, function: str, inputs: list[np.ndarray], records,
                         judge, compiler: CompilerReference | None = None) -> tuple[list, float, float, list[str]]:
    """The flow program interpreted, each dispatch run by the one-function-per-dispatch module (and by
    the compiler's own, `compiler`, when the build is not the compiler's)."""
    flow = b.snapshot_path("flow")
    t0 = time.perf_counter()
    vmfb = iree_dispatches.build(flow, b.folder / iree_dispatches.CACHE_DIR, ws.manifest.target,
                                 substitutions=_substitution_flags(ws, b), root=ws.root)
    build_seconds = time.perf_counter() - t0

    def run_dispatch(index: int, site: ir.Operation, args: list) -> list:
        s0 = time.perf_counter()
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        results = runner.run(index, arrays)
        judge(index, results, time.perf_counter() - s0)
        if compiler is not None and compiler.available:
            compiler.judge(index, records[index] if index < len(records) else None, arrays, results)
        return results

    t0 = time.perf_counter()
    ctx = mlir_context()  # single-threaded: a broken (edited) flow snapshot cannot deadlock the parse
    module = ir.Module.parse(flow.read_text(encoding="utf-8"), ctx)
    archive = ParameterArchive(b.params_path) if b.params_path is not None else None
    with iree_dispatches.DispatchRunner(vmfb) as runner, ctx:
        host = HostInterpreter(module, archive, run_dispatch)
        try:
            host.initialize()
            outs = host.call(function, inputs)
        except NotInterpretable as exc:
            raise StudioError(flow, f"the trace stopped: {exc}") from None
    return outs, build_seconds, time.perf_counter() - t0, iree_dispatches.notes(vmfb)


def _run_tensor_trace(ws: Workspace, b: variants.Build, function: str, inputs: list[np.ndarray], records,
                      judge) -> tuple[list, float, float, list[str]]:
    """The whole build run once with IREE's dispatch tensor tracing (substitutions fitted to it)."""
    source = b.snapshot_path(tensor_trace.FROM_PHASE)
    if source is None or not source.is_file():
        raise StudioError(ws.root, f"no {tensor_trace.FROM_PHASE} snapshot in build {b.name!r}; compile first")
    t0 = time.perf_counter()
    vmfb = tensor_trace.build_traced(source, variants.options_for(ws, b.name), b.folder / iree_dispatches.CACHE_DIR,
                                     root=ws.root)
    build_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    events, outs = tensor_trace.run_traced(vmfb, function, inputs, b.params_path)
    by_dispatch = tensor_trace.outputs_by_dispatch(events, [r.export for r in records])
    seconds = time.perf_counter() - t0
    for rec in records:
        if rec.index in by_dispatch:
            judge(rec.index, by_dispatch[rec.index], seconds / max(1, len(records)))
    return outs, build_seconds, seconds, tensor_trace.notes(vmfb)


def build_inputs(b: variants.Build, function: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """`inputs` in the element types `b`'s entry point takes (a demoted build may take f16)."""
    sig = pick_function(b.snapshot_path("input"), function)
    if len(sig.inputs) != len(inputs):
        raise StudioError(b.snapshot_path("input"), f"@{function} takes {len(sig.inputs)} inputs in build "
                                                    f"{b.name!r}, the model {len(inputs)}")
    return [np.asarray(a).astype(spec.numpy_dtype, copy=False) for a, spec in zip(inputs, sig.inputs)]


def _substituted(ws: Workspace) -> list[str]:
    from ..workspace.substitutions import load

    return sorted({s.name for s in load(ws) if s.applied})


def compare(index: int, rec, results: list[np.ndarray], pairings: list[Pairing], reference: dict,
            tolerance: float | None, seconds: float, types=frozenset()) -> DispatchTrace:
    """One dispatch's results against their paired references; `types`: the element types the
    compared values went through (`run/tolerance.upstream_types`), which set the tolerance."""
    t = DispatchTrace(index, (rec.export or rec.executable or "") if rec else "",
                      list(np.shape(results[0])) if results else [], results[0].dtype.name if results else "",
                      seconds=seconds)
    t.onnx_nodes = list(rec.onnx_nodes) if rec else []
    paired = [(r, p) for r, p in zip(results, pairings) if p.tensor is not None]
    if not paired:
        t.why_unpaired = pairings[0].why_not if pairings else "it has no result"
        if results:
            describe_values(t, results[0])
        return t
    t.onnx_tensor, t.onnx_node = paired[0][1].tensor, paired[0][1].node
    t.padded = paired[0][1].padded
    t.via = paired[0][1].via
    worst = None
    for result, p in paired:
        r, ref = p.view(np.asarray(result), np.asarray(reference[p.tensor]))
        err, scale = max_error(r, ref)
        rule = Tolerance(tolerance, 0.0, "given") if tolerance is not None else \
            arithmetic_tolerance(types, np.asarray(result).dtype, p.step)
        bound = rule.bound(scale)
        rel = err / scale if scale else (0.0 if err == 0 else float("inf"))
        excess = err / bound if bound else (0.0 if err == 0 else float("inf"))
        if worst is None or excess > worst[0]:
            worst = (excess, err, rel, scale, rule, bound, r, ref)
    _, err, rel, scale, rule, bound, r, ref = worst
    t.max_abs_error, t.max_rel_error, t.scale = err, rel, scale
    t.tolerance, t.atol, t.computed_in = rule.relative, rule.absolute, rule.computed_in
    t.departs = err > bound
    t.outside, t.first_differing = first_differing(r, ref, bound)
    describe_values(t, r)
    return t


def describe_values(t: DispatchTrace, values: np.ndarray) -> None:
    """`t`'s statistics and histogram of `values` (its finite elements; how many are not finite)."""
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size:
        t.stats = {"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean()),
                   "std": float(finite.std()), "nonfinite": int(np.asarray(values).size - finite.size)}
        try:
            counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS)
        except ValueError:  # a range too narrow for its magnitude (values nearly constant): one bin
            counts, edges = np.array([finite.size]), np.array([finite.min(), finite.max()])
        t.histogram = {"edges": edges.tolist(), "counts": counts.tolist()}


def _mark_inputs(traces: list[DispatchTrace], records) -> None:
    """Each dispatch's producers, and whether its inputs agree (None: through an unpaired dispatch)."""
    by_index = {t.index: t for t in traces}
    for rec in records:
        t = by_index.get(rec.index)
        if t is None:
            continue
        t.producers = sorted(rec.producers)
        feeding = [by_index[p] for p in t.producers if p in by_index]
        if any(p.departs for p in feeding):
            t.inputs_agree = False
        elif all(p.judged for p in feeding):
            t.inputs_agree = True
        else:
            t.inputs_agree = None
