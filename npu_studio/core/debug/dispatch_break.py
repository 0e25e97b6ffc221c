"""IREE's own break after a dispatch: a build that returns one dispatch's output, against the ONNX model.

`--iree-flow-break-dispatch=@FUNCTION:ORDINAL` makes the flow pipeline
(`InsertDebugTargetAtOrdinalPass`) return right after the ORDINAL-th
`flow.dispatch` at the top of FUNCTION's body, counted before executables
are deduplicated. The pass refuses a function that has callers, and an ONNX
import gives the model's entry point as a sync wrapper calling
`@NAME$async` (which holds every dispatch): there the flag exits 1 without
a message (`@NAME$async:N`) or breaks nothing (`@NAME:N`). With
`--iree-torch-emit-async-entry-points=false` the import makes one sync
`@NAME` holding the dispatches and no caller, and the break works. The
flag also reaches the JIT modules IREE's constant evaluation compiles (which
have no `@NAME`: "Failed to find breaking or tracing target function"), so
the break build has `--iree-opt-const-eval=false`; hoisted constants are
then computed by its initializer at run time.

`break_after(ws, index)` builds that variant of the workspace
(`variants`, named `break-<index>`, from the imported model: phase edits are
not in it; substitutions are, fitted to its buffer layout; with
`build=NAME`, a variant's dispatch, the variant `NAME.break-<index>` with
that variant's flags too, e.g. a demoted build), checks that its
last dispatch is the one asked for, runs it, and compares the output with
the ONNX tensor the dispatch computes (onnxruntime with that tensor
exposed): shape, statistics, histogram, first differing elements.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..compile.options import CompileOptions
from ..errors import StudioError
from ..executables.rebase import rebase_flags, substitution_flags, without_substitutions
from ..ir.context import mlir_context
from ..run.onnx_reference import imported_model
from ..run.runner import run_vmfb
from ..workspace import trust, variants
from ..workspace.workspace import Workspace
from ..run.flow_pairing import FlowPairing
from ..run.tolerance import upstream_types
from .numerics_trace import (build_inputs, check_traceable, compare, flow_index, mark_partial, reference_values,
                             trace_inputs)
from .trace_report import DispatchTrace

FORMAT = "npu-studio.break"
SYNC_ENTRY = "--iree-torch-emit-async-entry-points=false"
# IREE's constant evaluation compiles JIT modules through the same flow pipeline, with the same
# break flag, and fails there ("Failed to find breaking or tracing target function").
NO_CONST_EVAL = "--iree-opt-const-eval=false"
BREAK_FLAG = "--iree-flow-break-dispatch"
PREFIX = "break-"


@dataclass
class BreakResult:
    index: int
    flag: str  # the --iree-flow-break-dispatch flag the variant was built with
    variant: str
    dispatch: DispatchTrace  # its output against its ONNX tensor
    outputs: int  # how many tensors the broken build returned
    notes: list[str] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)  # build, run, onnxruntime

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": 1, "index": self.index, "flag": self.flag, "variant": self.variant,
                "outputs": self.outputs, "dispatch": asdict(self.dispatch), "notes": list(self.notes),
                "seconds": dict(self.seconds)}

    def summary_lines(self) -> list[str]:
        d = self.dispatch
        lines = [f"IREE's own break after dispatch #{self.index} ({self.flag}, build variant {self.variant!r}): "
                 f"it returned {self.outputs} tensor(s); the first is {'x'.join(map(str, d.shape))} {d.dtype}"]
        if d.stats:
            s = d.stats
            lines.append(f"  values: min {s['min']:.6g}  max {s['max']:.6g}  mean {s['mean']:.6g}  "
                         f"std {s['std']:.6g}  not finite {s['nonfinite']}")
        if d.histogram:
            lines += ["  histogram:", *_bars(d.histogram)]
        if not d.paired:
            lines.append(f"  not compared with an ONNX tensor: {d.why_unpaired}")
        else:
            how = f" [{d.via}]" if d.via else ""
            lines.append(f"  against ONNX tensor {d.onnx_tensor!r} (node {d.onnx_node}){how}: max abs error "
                         f"{d.max_abs_error:.4g}, relative {d.max_rel_error:.3g} (tolerance {d.tolerance:g}, "
                         f"{d.computed_in}), "
                         f"{d.outside} element(s) outside: " + ("DEPARTS" if d.departs else "agrees"))
            for e in d.first_differing:
                lines.append(f"    [{', '.join(map(str, e['index']))}] IREE {e['iree']:.6g}  ONNX {e['onnx']:.6g}")
        lines += [f"  note: {n}" for n in self.notes]
        return lines


def _bars(histogram: dict, width: int = 40, rows: int = 8) -> list[str]:
    """The histogram merged to `rows` rows of text bars."""
    edges, counts = histogram["edges"], histogram["counts"]
    step = max(1, -(-len(counts) // rows))
    merged = [(edges[i], edges[min(i + step, len(counts))], sum(counts[i:i + step]))
              for i in range(0, len(counts), step)]
    top = max(c for _, _, c in merged) or 1
    return [f"    [{lo:>11.4g}, {hi:>11.4g})  {'#' * round(width * c / top):<{width}} {c}" for lo, hi, c in merged]


def variant_name(index: int, build: str = variants.MAIN) -> str:
    return f"{PREFIX}{index}" if build == variants.MAIN else f"{build}.{PREFIX}{index}"


def _sites(flow: Path) -> list[tuple[str | None, str | None]]:
    """(export, enclosing function, or None when inside control flow) of each dispatch site, in order."""
    from iree.compiler import ir

    from ..ir.flow_graph import FlowGraph

    found = []
    with mlir_context() as ctx:
        graph = FlowGraph(ir.Module.parse(flow.read_text(encoding="utf-8"), ctx).operation)
        for site in graph.sites:
            parent = site.op.parent
            top = parent.name in ("util.func", "func.func", "util.initializer")
            name = ir.StringAttr(parent.attributes["sym_name"]).value if top and parent.name != \
                "util.initializer" else None
            found.append((site.record.export, name if top else None))
    return found


def break_target(ws: Workspace, index: int, build: str = variants.MAIN) -> tuple[str, int]:
    """(function, ordinal) IREE's break flag names for dispatch `index` of the build's flow snapshot."""
    flow = variants.resolve(ws, build).snapshot_path("flow")
    sites = _sites(flow)
    if not 0 <= index < len(sites):
        raise StudioError(flow, f"no dispatch #{index}: the build has {len(sites)} (#0..#{len(sites) - 1})")
    function = sites[index][1]
    if function is None:
        raise StudioError(flow, f"dispatch #{index} is not at the top of a function (control flow or an "
                                "initializer); IREE's break counts only those")
    return function.removesuffix("$async"), sum(1 for _, f in sites[:index] if f == function)


def sync_name(symbol: str | None, function: str) -> str | None:
    """A dispatch's symbol in the sync-entry build: IREE names dispatches after their function."""
    return None if symbol is None else symbol.replace(f"{function}$async_dispatch_", f"{function}_dispatch_")


def _fit_substitutions(function: str, notes: list[str]):
    """The variant build's options hook: the workspace's substitutions fitted to the broken build's layout."""

    def prepare(source: Path, options: CompileOptions, work: Path) -> CompileOptions:
        if not substitution_flags(options.extra_flags):
            return options
        plain = without_substitutions(options.extra_flags)
        command = [str(options.compiler or _iree_compile()), str(source), *options.flags(), *plain]
        fitted = rebase_flags(command, options.extra_flags, work, what="the broken build",
                              rename=lambda name: sync_name(name, function))
        notes.extend(fitted.notes)
        return options.with_(extra_flags=(*plain, *fitted.flags))

    return prepare


def _iree_compile():
    from ..compile.toolchain import iree_compile

    return iree_compile()


def build_break(ws: Workspace, index: int, on_progress=None, attach=None,
                build: str = variants.MAIN) -> tuple[variants.Variant, str, list[str]]:
    """The built variant broken after dispatch `index` of `build`, its break flag, and notes on its substitutions.

    Reused when already built with the same flags and the workspace has no
    substitutions (whose fitting depends on them); built (again) otherwise.
    `attach(stop)` receives the build's cancel (the app's job token).
    """
    trust.require(ws.root, f"trace --break {index} (a build broken after it, run)")  # before any variant is made
    function, ordinal = break_target(ws, index, build)
    flag = f"{BREAK_FLAG}=@{function}:{ordinal}"
    base = variants.get(ws, build).flags if build != variants.MAIN else []
    name = variant_name(index, build)
    flags = [*(f for f in base if f not in (SYNC_ENTRY, NO_CONST_EVAL)), SYNC_ENTRY, NO_CONST_EVAL, flag]
    existing = ws.manifest.variants.get(name)
    if existing is not None and list(existing.get("flags", [])) != flags:
        variants.remove(ws, name)  # an older build's dispatch #index was another one
        existing = None
    if existing is None:
        variants.create(ws, name, flags)
    notes: list[str] = []
    variant = variants.get(ws, name)
    if variant.build is None or ws.substitution_flags():
        try:
            job = variants.build_job(ws, name, on_progress=on_progress, prepare=_fit_substitutions(function, notes))
            if attach is not None:
                attach(job.cancel)
            variant = job.run()
        except BaseException:
            if existing is None:  # a break that did not build leaves no variant behind
                variants.remove(ws, name)
            raise
    return variant, flag, notes


def _check_last_dispatch(variant: variants.Variant, expected: str | None, index: int) -> None:
    flow = variant.snapshot_path("flow")
    function = variant.flags[-1].rpartition("@")[2].rpartition(":")[0]
    last = next((e for e, f in reversed(_sites(flow)) if f == function), None)
    if last != sync_name(expected, function):
        raise StudioError(flow, f"the broken build ends with dispatch {last}, not #{index} {expected}; "
                                "its dispatches are numbered otherwise than the workspace's build")


def break_after(ws: Workspace, index: int, inputs: list[np.ndarray] | None = None, *,
                tolerance: float | None = None, seed: int = 0, on_progress=None, attach=None,
                build: str = variants.MAIN) -> BreakResult:
    """Build (or reuse) the variant of `build` broken after its dispatch `index`, run it, compare with
    onnxruntime."""
    main = check_traceable(ws, build)
    if tolerance is not None and not (tolerance >= 0 and np.isfinite(tolerance)):
        raise StudioError(None, f"the tolerance must be a finite number >= 0, got {tolerance}")
    sig, inputs = trace_inputs(ws, inputs, seed)
    phase_index = flow_index(main)
    records = phase_index.dispatches
    if not 0 <= index < len(records):
        raise StudioError(ws.snapshot_path("flow"), f"no dispatch #{index}: the build has {len(records)} "
                                                    f"(#0..#{len(records) - 1})")
    rec = records[index]
    t0 = time.perf_counter()
    variant, flag, notes = build_break(ws, index, on_progress, attach, build)
    build_seconds = time.perf_counter() - t0
    _check_last_dispatch(variant, rec.export, index)
    notes.insert(0, "IREE's own break; built from the imported model, so edits of its phase snapshots are "
                    "not in it")
    t0 = time.perf_counter()
    results = run_vmfb(variant.vmfb_path, sig.name, build_inputs(variant.build, sig.name, inputs),
                       parameters=variant.build.params_path)
    run_seconds = time.perf_counter() - t0
    model = imported_model(ws.source_path)
    # The broken build's last dispatch is the workspace's dispatch `index`: paired as the trace pairs it,
    # its producers first (a dispatch that only moves data is paired through what it reads).
    pairing = FlowPairing(main.snapshot_path("flow"), phase_index, model)
    t0 = time.perf_counter()
    _, reference = reference_values(pairing, model, inputs, ws.source_path)
    ort_seconds = time.perf_counter() - t0
    pairings = []
    for r in records:  # all of them, in order: a later dispatch may complete the op this one holds part of
        got = pairing.pair(r.index, results if r.index == index else None)
        pairings = got if r.index == index else pairings
    d = compare(index, rec, [np.asarray(r) for r in results], pairings, reference, tolerance,
                run_seconds, upstream_types(records).get(index, set()))
    mark_partial([d], pairing.partial())
    return BreakResult(index, flag, variant.name, d, len(results), notes,
                       {"build": build_seconds, "run": run_seconds, "onnxruntime": ort_seconds})

