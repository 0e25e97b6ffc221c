"""The numeric gate: does the substituted build compute what the plain build does?

Both builds run with `iree.runtime` in fresh processes (core/run/runner.py) on
the same inputs: seeded random ones built from the entry point's signature,
or `.npy` files the user picked. Per output the gate reports whether the
results are bit-identical, the max absolute error and the same relative to
the output's scale (its largest finite |plain|; never a per-element relative
error, which is huge at near-zero elements and says nothing), the max
distance in units in the last place over the elements of at least
ULP_FLOOR of the scale, how many elements lie outside the tolerance and the
worst elements with their plain and substituted values; for ONNX models
both builds are also compared with onnxruntime, when it is installed.

The bound is the one rule of run/tolerance (docs/model-debugging.md,
"Tolerance"): an element is outside when |substituted - plain| >
T * max(1, scale) + A, scale being the output's largest finite |plain|
(a NaN where the plain build has a number is outside). T and A come from
the arithmetic: the element types the program computes in (both builds
run the same program but for the substituted executable, whose float sums
may go in another order), unless the user gives T. An output whose plain result
is so flat that one constant would pass (all zeros, any constant, a single
zero) cannot tell a right substitution from a wrong one: its verdict is
CANNOT TELL, never PASS. The gate passes when every output passes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..lazy_import import lazy_module

np = lazy_module("numpy")

from ..errors import StudioError
from .runner import pick_function, random_inputs, run_vmfb
from .tolerance import (WORST_COUNT, Tolerance, abs_errors, arithmetic_tolerance, element_text, flat_reference,
                        max_error, relative_to_scale, scale_of, weighted_errors, worst_elements)

DEFAULT_TOLERANCE = None  # from the arithmetic (run/tolerance); a number: the user's T
ULP_FLOOR = 0.01  # ULPs are counted on elements of at least this fraction of the output's scale
PASS, FAIL, CANNOT_TELL, IDENTICAL = "PASS", "FAIL", "CANNOT TELL", "bit-identical"
SCALE_NOTE = "errors are relative to each output's scale, its largest |plain|"


@dataclass
class WorstElement:
    index: tuple[int, ...]
    plain: float
    substituted: float
    abs_error: float


@dataclass
class OutputComparison:
    output: int
    shape: tuple[int, ...]
    dtype: str
    bit_identical: bool
    max_abs: float
    scale: float  # largest finite |plain|
    rel_error: float  # max_abs / scale
    max_ulp: int  # over the elements with |plain| >= ULP_FLOOR * scale
    max_ulp_all: int  # over all elements (near-zero ones give huge counts)
    outside: int
    total: int
    worst: list[WorstElement] = field(default_factory=list)
    plain_flat: str | None = None  # why the plain output cannot tell ("is constant (all 0.0)")
    substituted_flat: str | None = None  # the substituted output is constant too (a hint, not a verdict)
    # max |build - onnxruntime| per build, or None when not an ONNX model / no onnxruntime
    plain_vs_onnxruntime: float | None = None
    substituted_vs_onnxruntime: float | None = None

    @property
    def status(self) -> str:
        if self.outside:
            return FAIL
        if self.plain_flat:
            return CANNOT_TELL
        return IDENTICAL if self.bit_identical else PASS

    @property
    def passed(self) -> bool:
        return self.status in (PASS, IDENTICAL)

    def notes(self) -> list[str]:
        notes = []
        if self.plain_flat:
            notes.append(f"the plain build's output {self.plain_flat}: the check cannot tell")
        if self.substituted_flat:
            notes.append(f"the substituted output {self.substituted_flat}")
        return notes

    def error_text(self) -> str:
        return (f"max abs error {self.max_abs:.3g} = {self.rel_error:.3g} of the output's scale "
                f"(largest |plain| {self.scale:.6g})")


@dataclass
class GateReport:
    function: str
    tolerance: float
    inputs: str  # where the inputs came from
    outputs: list[OutputComparison]
    onnxruntime: str  # "compared", or why not

    @property
    def status(self) -> str:
        statuses = {o.status for o in self.outputs}
        for s in (FAIL, CANNOT_TELL, PASS):
            if s in statuses:
                return s
        return IDENTICAL

    @property
    def passed(self) -> bool:
        return self.status in (PASS, IDENTICAL)

    @property
    def bit_identical(self) -> bool:
        return all(o.bit_identical for o in self.outputs)

    def verdict(self) -> dict:
        """The short form kept with the substitution in the manifest and shown in its list."""
        worst = max(self.outputs, key=lambda o: o.rel_error, default=None)
        flat = [f"the plain build's output{o.output} {o.plain_flat}" for o in self.outputs if o.plain_flat]
        return {"status": self.status, "passed": self.passed, "bit_identical": self.bit_identical,
                "tolerance": self.tolerance, "max_abs": max((o.max_abs for o in self.outputs), default=0.0),
                "rel_error": worst.rel_error if worst else 0.0, "scale": worst.scale if worst else 0.0,
                "max_ulp": max((o.max_ulp for o in self.outputs), default=0),
                "cannot_tell": "; ".join(flat) or None}

    def to_json(self) -> dict:
        data = asdict(self)
        for o, out in zip(self.outputs, data["outputs"]):
            out.update(status=o.status, passed=o.passed, notes=o.notes())
        data.update(status=self.status, passed=self.passed, bit_identical=self.bit_identical,
                    summary=verdict_summary(self.verdict()))
        return data

    def format(self) -> str:
        lines = [f"@{self.function} on {self.inputs}, tolerance {self.tolerance:g} "
                 f"(an element fails when |substituted - plain| > T * max(1, largest |plain|))"]
        for o in self.outputs:
            head = f"output{o.output} {o.dtype} {'x'.join(map(str, o.shape))}: "
            if o.bit_identical:
                head += "bit-identical"
            else:
                head += (f"{o.error_text()}, {o.outside} of {o.total} outside tolerance, "
                         f"max ULP {o.max_ulp} on elements of at least {ULP_FLOOR:.0%} of the scale")
            lines.append(head)
            lines += [f"  {n}" for n in o.notes()]
            for w in o.worst:
                lines.append(f"  worst at {list(w.index)}: plain {element_text(w.plain, o.dtype)}, "
                             f"substituted {element_text(w.substituted, o.dtype)}")
            if o.plain_vs_onnxruntime is not None:
                lines.append(f"  vs onnxruntime: plain max abs {o.plain_vs_onnxruntime:.6g}, "
                             f"substituted max abs {o.substituted_vs_onnxruntime:.6g}")
        if self.onnxruntime != "compared":
            lines.append(f"onnxruntime: {self.onnxruntime}")
        lines.append("verdict: " + verdict_summary(self.verdict()))
        return "\n".join(lines)


def verdict_status(v: dict) -> str:
    """A stored verdict's status (verdicts stored before the status existed: from passed/bit_identical)."""
    if "status" in v:
        return v["status"]
    return IDENTICAL if v.get("bit_identical") else PASS if v.get("passed") else FAIL


def verdict_summary(v: dict) -> str:
    """A stored verdict in one line: 'PASS: max abs error 7e-07 = 3e-07 of the output's scale ...'."""
    status = verdict_status(v)
    if status == CANNOT_TELL:
        return f"{CANNOT_TELL}: {v.get('cannot_tell')}: a wrong substitution would pass too (try other inputs)"
    if status == IDENTICAL:
        return "PASS (bit-identical)"
    if "rel_error" not in v:
        return f"{status}: max abs error {v.get('max_abs', 0):.3g}"
    return (f"{status}: max abs error {v['max_abs']:.3g} = {v['rel_error']:.3g} of the output's scale "
            f"(largest |plain| {v['scale']:.6g}), max ULP {v['max_ulp']} at tolerance {v['tolerance']:g}")


def verdict_short(v: dict) -> str:
    """A stored verdict in a few words, for a table cell: 'PASS (err 3e-07 of scale)'."""
    status = verdict_status(v)
    if status == CANNOT_TELL:
        return f"{CANNOT_TELL} (flat reference)"
    if status == IDENTICAL:
        return "PASS (bit-identical)"
    if "rel_error" not in v:
        return f"{status} (max abs {v.get('max_abs', 0):.3g})"
    return f"{status} (err {v['rel_error']:.2g} of scale)"


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise distance in units in the last place (integers: the plain difference)."""
    if not np.issubdtype(a.dtype, np.floating):
        return np.abs(a.astype(np.int64) - b.astype(np.int64))
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]

    def ordered(x):
        # IEEE floats ordered as sign-magnitude integers; map negatives below zero.
        i = np.asarray(x, order="C").view(ints).astype(np.int64)  # rank 0 stays rank 0
        return np.where(i < 0, np.int64(np.iinfo(ints).min) - i, i)

    return np.abs(ordered(a) - ordered(b))


def compare_arrays(plain: np.ndarray, sub: np.ndarray, tolerance: float | Tolerance, output: int = 0) -> OutputComparison:
    """`tolerance`: the rule's answer (run/tolerance), or its relative T alone."""
    if plain.shape != sub.shape or plain.dtype != sub.dtype:
        raise StudioError(None, f"output{output}: plain build gives {plain.dtype}{list(plain.shape)}, "
                                f"substituted build {sub.dtype}{list(sub.shape)}")
    rule = tolerance if isinstance(tolerance, Tolerance) else Tolerance(float(tolerance), 0.0, "given")
    identical = plain.tobytes() == sub.tobytes()
    p64 = plain.astype(np.float64)
    scale = scale_of(p64)
    diff = abs_errors(sub, plain)
    bound = rule.bound(scale)
    outside = weighted_errors(sub, plain, scale) > bound  # a fill (a mask's -1e9) by its own magnitude
    max_abs = float(diff.max()) if diff.size else 0.0
    both_finite = np.isfinite(p64) & np.isfinite(sub.astype(np.float64))
    ulps = ulp_distance(plain, sub)
    significant = both_finite & (np.abs(p64) >= ULP_FLOOR * scale)
    worst = [] if identical else [WorstElement(*w) for w in worst_elements(sub, plain, WORST_COUNT)]
    return OutputComparison(
        output, tuple(plain.shape), str(plain.dtype), identical, max_abs, scale,
        relative_to_scale(max_abs, scale), int(ulps[significant].max(initial=0)),
        int(ulps[both_finite].max(initial=0)), int(outside.sum()), int(diff.size), worst,
        flat_reference(plain, bound), None if identical else flat_reference(sub, 0.0),
    )


def load_inputs(paths: list[Path], sig) -> list[np.ndarray]:
    """The --input files for `sig` through the one reader (runner.load_inputs)."""
    from .runner import load_inputs as read_inputs

    return read_inputs(sig, list(paths))


def gate_tolerance(ws, dtype, tolerance: float | None) -> Tolerance:
    """The rule for one output of the gate: the user's T, or the arithmetic of the workspace's program
    (every element type its flow snapshot computes in, as `simulate --check` against IREE)."""
    if tolerance is not None:
        return Tolerance(float(tolerance), 0.0, "given")
    from ..ir.dispatch_index import index_file
    from .tolerance import dispatch_types

    flow = ws.snapshot_path("flow") if "flow" in ws.manifest.phases else None
    types = set().union(*(dispatch_types(r) for r in index_file(flow, "flow").dispatches)) \
        if flow is not None and flow.is_file() else set()
    return arithmetic_tolerance(types, dtype)


def compare_builds(ws, plain_vmfb: Path, *, input_files: list[Path] | None = None,
                   tolerance: float | None = DEFAULT_TOLERANCE, seed: int = 0,
                   substituted_vmfb: Path | None = None) -> GateReport:
    """Run the plain build and the workspace's current build (or `substituted_vmfb`, a build not
    published yet) on the same inputs and compare (`tolerance` None: from the arithmetic)."""
    if tolerance is not None and not tolerance >= 0:
        raise StudioError(None, f"tolerance must not be negative, got {tolerance}")
    sig = pick_function(ws.snapshot_path("input"))
    if input_files:
        inputs = load_inputs(list(input_files), sig)
        origin = ", ".join(Path(p).name for p in input_files)
    else:
        inputs = random_inputs(sig, seed)
        origin = f"seeded random inputs (seed {seed})"
    plain = run_vmfb(plain_vmfb, sig.name, inputs, parameters=ws.params_path)
    sub = run_vmfb(substituted_vmfb or ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)
    rules = [gate_tolerance(ws, p.dtype, tolerance) for p in plain]
    outputs = [compare_arrays(p, s, r, i) for i, (p, s, r) in enumerate(zip(plain, sub, rules))]
    note = _against_onnxruntime(ws, inputs, plain, sub, outputs)
    used = max((r.relative for r in rules), default=tolerance or 0.0)
    return GateReport(sig.name, used, origin, outputs, note)


def _against_onnxruntime(ws, inputs, plain, sub, outputs) -> str:
    model = ws.source_path
    if model.suffix.lower() != ".onnx":
        return "not an ONNX model"
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        return "not installed"
    proto = onnx.load(str(model))  # its external data sits next to it in source/
    proto.ir_version = min(proto.ir_version, 10)  # onnxruntime rejects IR version 14
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    refs = session.run(None, feeds)
    for o, r, p, s in zip(outputs, refs, plain, sub):
        o.plain_vs_onnxruntime = max_error(p, r)[0]
        o.substituted_vs_onnxruntime = max_error(s, r)[0]
    return "compared"


def gate_substitution(ws, name: str, kind: str, *, input_files: list[Path] | None = None,
                      tolerance: float | None = DEFAULT_TOLERANCE, seed: int = 0, plain_folder: Path | None = None,
                      ) -> GateReport:
    """Compare the current build with the plain one and keep the verdict with the substitution."""
    from ..executables.substitution import plain_build, record_verdict

    folder = plain_folder or plain_build(ws)
    report = compare_builds(ws, folder / "module.vmfb", input_files=input_files, tolerance=tolerance, seed=seed)
    record_verdict(ws, name, kind, report.verdict())
    return report
