"""`check`: does the NPU program compute what the model computes?

Runs the functional simulation of a workspace's NPU program on seeded
(or given) inputs and compares its outputs with the workspace's IREE CPU
build (run in a fresh process) and with onnxruntime on the source model.
Each NPU dispatch is also compared with IREE's CPU build of that dispatch
on the same inputs; when something differs, the report names the first
dispatch whose own result diverges, with its error.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import StudioError
from ...run.dispatches import iree_dispatches
from ...run.dispatches.cpu_reductions import reduction_configs
from ...run.dispatches.scalar_ops import NotInterpretable
from ...run.onnx_reference import run_onnxruntime
from ...run.runner import pick_function, random_inputs, run_vmfb
from ...ir.dispatch_index import index_file
from ...run.tolerance import (arithmetic_tolerance, dispatch_types, element_text, flat_reference, max_error,
                              relative_to_scale, tolerance_of, worst_elements)
from ...textio import write_text_atomic
from ...workspace import substitutions, trust
from ...workspace.workspace import Workspace
from ..program.npu_ir import NpuProgram
from .functional_sim import DispatchOutcome, FunctionalSim, TileFault
from .quant_steps import StepComparison, compare_in_steps, output_steps
from .varying_tensor import compare_last_varying, constant, quantized_result

REPORT_NAME = "last.json"  # in the workspace's npu/check/, the last check's report


@dataclass
class Comparison:
    reference: str  # "iree-cpu" | "onnxruntime"
    max_error: float
    scale: float  # largest |reference| value, the yardstick of the tolerance
    tolerance: float
    worst: str = ""  # where the largest error sits: "output0[0, 3]: 0.25, reference 0.5"
    flat: str | None = None  # why the reference cannot tell: "output0 is constant (all 0.0)"
    absolute: float = 0.0  # A of the rule: one quantization step of a dequantized output

    @property
    def ok(self) -> bool:
        return self.max_error <= self.tolerance * max(1.0, self.scale) + self.absolute

    @property
    def cannot_tell(self) -> bool:
        """Within tolerance, but against a reference so flat that a constant output would pass."""
        return self.ok and self.flat is not None

    def line(self) -> str:
        verdict = f"CANNOT TELL: the reference's {self.flat}" if self.cannot_tell else "ok" if self.ok else "DIFFERS"
        where = f"; worst {self.worst}" if self.worst else ""
        return (f"  vs {self.reference:<12} max error {self.max_error:.3g} = "
                f"{relative_to_scale(self.max_error, self.scale):.3g} of the largest value {self.scale:.3g} "
                f"(tolerance {self.tolerance:g} relative{f' + {self.absolute:g}' if self.absolute else ''}"
                f"{where}) {verdict}")

    def to_dict(self) -> dict:
        return {"reference": self.reference, "max_error": self.max_error, "scale": self.scale,
                "tolerance": self.tolerance, "absolute": self.absolute, "ok": self.ok, "worst": self.worst,
                "flat_reference": self.flat}


def final_line(ok: bool, comparisons) -> str:
    """The report's last line: OK, MISMATCH, or OK with the outputs that could not tell named."""
    if not ok:
        return "MISMATCH"
    flat = [c.reference for c in comparisons if c is not None and getattr(c, "cannot_tell", False)]
    if flat:
        return (f"OK per dispatch; the outputs cannot tell (the {' and '.join(flat)} reference is flat: "
                f"a constant output would pass)")
    return "OK"


@dataclass
class CheckReport:
    function: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    vs_iree: Comparison | None
    vs_onnxruntime: Comparison | StepComparison | None
    dispatches: list[DispatchOutcome]
    first_divergent: DispatchOutcome | None
    sim_seconds: float
    iree_seconds: float | None
    notes: list[str] = field(default_factory=list)
    reference_substitutions: list[str] = field(default_factory=list)  # in the IREE build compared with

    @property
    def ok(self) -> bool:
        comps = [c for c in (self.vs_iree, self.vs_onnxruntime) if c is not None]
        return self.first_divergent is None and all(c.ok for c in comps)

    def to_dict(self) -> dict:
        """The report as JSON data (inputs and outputs as shapes only)."""
        def comp(c):
            return None if c is None else c.to_dict()
        return {
            "format": "npu-studio.check", "version": 1, "ok": self.ok, "function": self.function,
            "inputs": [list(np.shape(a)) for a in self.inputs],
            "vs_iree": comp(self.vs_iree), "vs_onnxruntime": comp(self.vs_onnxruntime),
            "first_divergent": None if self.first_divergent is None else self.first_divergent.index,
            "sim_seconds": self.sim_seconds, "iree_seconds": self.iree_seconds,
            "dispatches": [{"index": d.index, "symbol": d.symbol, "computed_by": d.computed_by,
                            "tiles": d.tiles, "seconds": d.seconds, "max_error": d.max_error,
                            "scale": d.scale, "dtype": d.dtype, "note": d.note} for d in self.dispatches],
            "notes": list(self.notes), "reference_substitutions": list(self.reference_substitutions),
        }

    def save_json(self, path: Path) -> None:
        """Write `to_dict()` atomically (a reader never sees half a report)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(self.to_dict(), indent=1))

    def summary_lines(self) -> list[str]:
        npu = sum(1 for d in self.dispatches if d.computed_by == "npu")
        lines = [f"functional simulation of @{self.function}: {len(self.dispatches)} dispatches "
                 f"({npu} on the NPU tile by tile, {len(self.dispatches) - npu} on IREE's CPU build), "
                 f"{self.sim_seconds:.2f} s"]
        lines += [c.line() for c in (self.vs_iree, self.vs_onnxruntime) if c is not None]
        if self.vs_iree is not None and self.reference_substitutions:
            lines.append("  the IREE reference contains substitutions: " + ", ".join(self.reference_substitutions))
        worst = max((d for d in self.dispatches if d.max_error is not None),
                    key=lambda d: d.max_error / max(1.0, d.scale or 0), default=None)
        if worst is not None:
            lines.append(f"  per dispatch vs IREE: worst #{worst.index} max error {worst.max_error:.3g} "
                         f"(largest value {worst.scale:.3g})")
        d = self.first_divergent
        if d is not None:
            lines.append(f"  first divergent dispatch: #{d.index} {d.symbol}: max error {d.max_error:.3g} "
                         f"against IREE's result on the same inputs (largest value {d.scale:.3g})")
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(final_line(self.ok, (self.vs_iree, self.vs_onnxruntime)))
        return lines


@dataclass
class Arithmetic:
    """The element types a flow program computes in: all of them, and each dispatch's own (run/tolerance)."""

    program: set[str]
    dispatch: dict[int, set[str]]


def arithmetic_of(flow: Path) -> Arithmetic:
    records = index_file(flow, "flow").dispatches
    own = {r.index: dispatch_types(r) for r in records}
    return Arithmetic(set().union(*own.values()) if own else set(), own)


def _compare(reference: str, ours: list[np.ndarray], ref: list[np.ndarray],
             exact: bool = False, types: set[str] | None = None, absolute: float = 0.0) -> Comparison:
    """Max error against `ref`; `exact`: a quantized model, which must match bit for bit.

    `types`: what the program computes in (`arithmetic_of(...).program`): the tolerance rule's input;
    None: the outputs' own element types."""
    err, scale, tol, worst, flat = 0.0, 0.0, 0.0, "", []
    for i, (a, b) in enumerate(zip(ours, ref)):
        e, s = max_error(a, b)
        dtype = np.asarray(a).dtype
        t = 0.0 if exact else (tolerance_of(dtype) if types is None else _relative(types, dtype))
        if e > err:
            [(idx, want, got, _)] = worst_elements(a, b, 1)
            worst = f"output{i}{list(idx)}: {element_text(got, dtype.name)}, reference {element_text(want, dtype.name)}"
        err, scale, tol = max(err, e), max(scale, s), max(tol, t)
        why = flat_reference(b, t * max(1.0, s))
        if why:
            flat.append(f"output{i} {why}")
    if len(ours) != len(ref):
        err = float("inf")
    return Comparison(reference, err, scale, tol, worst, "; ".join(flat) or None, absolute)


def quantized_outputs(source: Path, count: int) -> list[float] | None:
    """The quantization step of each output of a quantized ONNX model (every output an integer or a
    dequantized one), or None: the one test of `simulate --check` and `run --npu`."""
    if Path(source).suffix.lower() != ".onnx":
        return None
    steps = output_steps(source)
    return steps if steps and len(steps) == count and all(st is not None for st in steps) else None


def against_onnxruntime(source: Path, outputs: list[np.ndarray], ort_out: list[np.ndarray],
                        arithmetic: Arithmetic) -> Comparison | StepComparison:
    """The outputs against onnxruntime's: in quantization steps for a quantized model, else by the rule.

    A quantized model that computes in a float type looser than f32 before it quantizes (f16 between
    casts) is judged by the rule, plus one quantization step (A): the two round their f16 values
    apart, so many elements may land one step apart."""
    steps = quantized_outputs(source, len(outputs))
    loose = arithmetic_tolerance(arithmetic.program, "float32").relative > tolerance_of("float32")
    if steps is not None and not loose:
        return compare_in_steps("onnxruntime", outputs, ort_out, steps)
    return _compare("onnxruntime", outputs, ort_out, types=arithmetic.program, absolute=max(steps or [0.0]))


def _relative(types, dtype) -> float:
    """The rule's tolerance, as the relative bound this check's comparisons use."""
    rule = arithmetic_tolerance(types, dtype)
    return rule.relative if rule.relative else tolerance_of(dtype)


def diverges(d: DispatchOutcome, arithmetic: Arithmetic | None = None) -> bool:
    """Does the dispatch's own result differ from IREE's on the same inputs beyond its arithmetic's tolerance?"""
    types = arithmetic.dispatch.get(d.index) if arithmetic is not None else None
    tol = tolerance_of(d.dtype) if not types else _relative(types, d.dtype)
    return d.max_error is not None and d.max_error > tol * max(1.0, d.scale or 0.0)


def check(workspace: Workspace, program: NpuProgram, inputs: list[np.ndarray] | None = None, seed: int = 0,
          *, onnxruntime: bool = True, iree_build: bool = True, fault: TileFault | None = None,
          function: str | None = None, stage_rounding: str | None = None,
          iree_order: bool | None = None) -> CheckReport:
    """Simulate `program` (the NPU program of `workspace`'s flow snapshot) and compare.

    `onnxruntime` / `iree_build` False leave out that comparison of the
    model's outputs (the per-dispatch comparison with IREE always runs).
    A quantized model (every output an integer or dequantized one) must
    match IREE's build exactly and is compared with onnxruntime in
    quantization steps (`quant_steps`). `stage_rounding` makes the output
    stage's model round otherwise than the target says (a test's fault).
    `iree_order`: float sums follow the order of IREE's CPU build
    (`cpu_reductions`; bit for bit, slower); None: for quantized models.

    Raises StudioError (one line, naming the file) when the workspace has no
    build or flow snapshot, or the dispatch module does not compile.
    """
    ws = workspace
    # Before anything is written (the dispatch module's cache): the check runs IREE's build of each dispatch.
    trust.require(ws.root, "simulate --check (IREE's CPU build of every dispatch, run)")
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no vmfb; compile first")
    if "flow" not in ws.manifest.phases:
        raise StudioError(ws.root, "no flow snapshot; compile first")
    flow = ws.snapshot_path("flow")
    sig = pick_function(ws.snapshot_path("input"), function)
    if any(d is None for spec in sig.inputs for d in spec.shape):
        raise StudioError(ws.root, f"@{sig.name} has dynamic input shapes; the functional simulation needs static ones")
    if inputs is None:
        inputs = random_inputs(sig, seed)
    elif len(inputs) != len(sig.inputs):
        raise StudioError(ws.root, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(inputs)}")
    for i, (a, spec) in enumerate(zip(inputs, sig.inputs)):
        a = np.asarray(a)
        if a.shape != tuple(spec.shape) or a.dtype != spec.numpy_dtype:
            raise StudioError(ws.root, f"input {i} of @{sig.name} must be {spec}, got "
                                       f"{'x'.join(map(str, a.shape))} {a.dtype}")
    vmfb = iree_dispatches.build(flow, ws.root / iree_dispatches.CACHE_DIR, root=ws.root)
    is_onnx = ws.source_path.suffix.lower() == ".onnx"
    steps = output_steps(ws.source_path) if is_onnx else []
    quantized = bool(steps) and all(st is not None for st in steps)
    reductions = None
    notes: list[str] = []
    if iree_order or (iree_order is None and quantized):
        try:
            reductions = reduction_configs(flow, ws.root / iree_dispatches.CACHE_DIR, root=ws.root)
        except StudioError as exc:  # the check still runs, in numpy's order, and says so
            notes.append(f"IREE's lowering configs could not be read ({exc.reason}): float sums in numpy's "
                         "order, their last bits may differ from IREE's")
    with iree_dispatches.DispatchRunner(vmfb) as runner:
        sim = FunctionalSim(flow, program, ws.params_path, runner, fault, stage_rounding=stage_rounding,
                            reductions=reductions,
                            keep_intermediates=quantized_result if quantized and onnxruntime else False)
        try:
            result = sim.run(sig.name, inputs)
        except NotInterpretable as exc:
            raise StudioError(flow, f"functional simulation stopped: {exc}") from None
    vs_iree, iree_seconds = None, None
    if iree_build:
        t0 = time.perf_counter()
        iree_out = run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)
        iree_seconds = time.perf_counter() - t0
    quantized = quantized and len(steps) == len(result.outputs)
    arithmetic = arithmetic_of(flow)
    if iree_build:
        vs_iree = _compare("iree-cpu", result.outputs, iree_out, exact=quantized, types=arithmetic.program)
    vs_ort = None
    if onnxruntime and is_onnx:
        try:
            ort_out = run_onnxruntime(ws.source_path, inputs)
            vs_ort = against_onnxruntime(ws.source_path, result.outputs, ort_out, arithmetic)
            if quantized and constant(ort_out):
                vs_ort = _where_it_varies(ws, inputs, result.intermediates, vs_ort, notes)
        except ImportError:
            notes.append("onnxruntime is not installed: no comparison with it")
        except Exception as exc:  # onnxruntime's own errors (unsupported op, ...) are not ours
            notes.append(f"onnxruntime could not run the model: {' '.join(str(exc).split())[:200]}")
    for d in result.dispatches:
        if d.note:
            notes.append(f"dispatch #{d.index}: {d.note}")
    first = next((d for d in result.dispatches if diverges(d, arithmetic)), None)
    return CheckReport(sig.name, inputs, result.outputs, vs_iree, vs_ort, result.dispatches, first,
                       result.seconds, iree_seconds, notes,
                       [s.describe() for s in substitutions.applied(ws)] if iree_build else [])


def _where_it_varies(ws: Workspace, inputs, intermediates, outputs: StepComparison, notes: list[str]):
    """The comparison with onnxruntime moved to the last quantized tensor that varies (varying_tensor)."""
    said = f"the model's outputs are constant on these inputs ({outputs.differing} of {outputs.elements} " \
           f"elements differ from onnxruntime's)"
    at = compare_last_varying(ws, inputs, intermediates)
    if at is None:
        notes.append(f"{said} and no quantized tensor varies: the comparison with onnxruntime compares constants")
        return outputs
    notes.append(f"{said}: compared at {at.tensor}, the last quantized tensor that varies "
                 f"({at.distinct} distinct values)")
    return at


def load_inputs(ws: Workspace, paths: list[Path], function: str | None = None) -> list[np.ndarray]:
    """The --input files for the workspace's entry point, through the one reader (runner.load_inputs)."""
    from ...run.runner import load_inputs as read_inputs

    return read_inputs(pick_function(ws.snapshot_path("input"), function), list(paths), ws.root)
