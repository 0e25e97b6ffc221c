"""What `precision` found for each demoted build, and its verdict.

A demoted build ends in one of these verdicts, never two:

    ok                 IREE built and ran it; no dispatch and no output departs
    departs            IREE built and ran it; a dispatch or an output departs
    iree-cannot-build  iree-compile failed on it (IREE's first error line, the flags, the crash reproducer)
    iree-cannot-run    IREE built it but its runtime refused to run the module
    cannot-trace       it ran, but the dispatch-by-dispatch comparison could not be made

The flags named with IREE's failures are the variant's own: the workspace's
build, which is the same compile without them, built and ran (`precision`
runs it first), so those flags are what IREE fails on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .trace_report import OutputTrace, TraceReport

OK, DEPARTS, CANNOT_BUILD, CANNOT_RUN, CANNOT_TRACE = (
    "ok", "departs", "iree-cannot-build", "iree-cannot-run", "cannot-trace")
# Failures of IREE 3.13 seen on demoted builds, and what is known to get past them (each checked by hand).
KNOWN_FAILURES = (
    ("undefined symbol: fmaxf",
     "IREE's f16 code calls the C library's fmaxf (Softmax, LayerNorm), which its embedded linker does not "
     "provide; iree-compile links it with --iree-llvmcpu-link-embedded=false (the system linker)"),
    ("exceeds backing buffer",
     "IREE's f16 demotion leaves the async entry point's results f32 buffer views over f16 storage "
     "(the f16 demotion here builds the sync entry point, which runs)"),
)


@dataclass
class IreeFailure:
    stage: str  # "build" or "run"
    message: str  # IREE's own first error line
    flags: list[str]  # the flags the workspace's own (working) build does not have
    reproducer: str | None = None  # the compiler's crash reproducer, relative to the workspace

    @property
    def known(self) -> str:
        return next((why for text, why in KNOWN_FAILURES if text in self.message), "")

    def to_dict(self) -> dict:
        return {"stage": self.stage, "message": self.message, "flags": self.flags, "reproducer": self.reproducer,
                "known": self.known}

    def lines(self) -> list[str]:
        verb = "cannot build" if self.stage == "build" else "cannot run"
        lines = [f"    IREE {verb} it with {' '.join(self.flags)}: {self.message}"]
        if self.reproducer:
            lines.append(f"    crash reproducer: {self.reproducer}")
        if self.known:
            lines.append(f"    known: {self.known}")
        return lines


@dataclass
class PrecisionResult:
    demotion: str
    variant: str
    flags: list[str]
    build_seconds: float
    trace: TraceReport | None  # None when the variant could not be built or traced
    vs_f32: list[OutputTrace] = field(default_factory=list)  # its outputs against the workspace's own build
    error: str = ""  # why it could not be traced
    failure: IreeFailure | None = None
    ran: bool = False  # IREE ran the whole module (its outputs are in vs_f32); else they are the dispatches'

    @property
    def verdict(self) -> str:
        if self.failure is not None:
            return CANNOT_BUILD if self.failure.stage == "build" else CANNOT_RUN
        if self.trace is None:
            return CANNOT_TRACE
        return OK if self.trace.ok and all(o.ok for o in self.vs_f32) else DEPARTS

    @property
    def ok(self) -> bool:
        return self.verdict == OK

    def to_dict(self) -> dict:
        t = self.trace
        return {"demotion": self.demotion, "variant": self.variant, "flags": self.flags, "ok": self.ok,
                "verdict": self.verdict, "build_seconds": self.build_seconds, "error": self.error,
                "iree_failure": self.failure.to_dict() if self.failure else None, "module_ran": self.ran,
                "vs_f32": [{"index": o.index, "max_abs_error": o.max_abs_error, "scale": o.scale,
                            "tolerance": o.tolerance, "ok": o.ok} for o in self.vs_f32],
                "trace": t.to_dict() if t is not None else None}

    def lines(self) -> list[str]:
        lines = [f"  {self.demotion:<17} ({' '.join(self.flags)}; built in {self.build_seconds:.1f} s): "
                 f"{self.verdict.upper()}"]
        if self.failure is not None:
            lines += self.failure.lines()
        if self.trace is None:
            if self.error:
                lines.append(f"    cannot trace: {self.error}")
            return lines
        whose = "module output" if self.ran else "output (dispatch by dispatch)"
        for o in self.vs_f32:
            lines.append(f"    {whose} {o.index} vs f32 build: max abs error {o.max_abs_error:.3g} "
                         f"(largest value {o.scale:.3g}, tolerance {o.tolerance:g}) {'ok' if o.ok else 'DIFFERS'}")
        for o in self.trace.outputs:
            lines.append(f"    output {o.index} (dispatch by dispatch) vs onnxruntime: max abs error "
                         f"{o.max_abs_error:.3g} {'ok' if o.ok else 'DIFFERS'}")
        for d in self.trace.dispatches:
            lines.append(f"    #{d.index:<3} {d.symbol}: " + (
                f"vs {d.onnx_tensor} max abs error {d.max_abs_error:.3g} (largest value {d.scale:.3g})"
                + (" DEPARTS" if d.departs else "") if d.paired else f"not compared: {d.why_unpaired}"))
        first = self.trace.first_divergent
        lines.append(f"    first dispatch that departs: #{first.index} {first.symbol} ({first.onnx_tensor})"
                     if first is not None else "    no dispatch departs")
        return lines


@dataclass
class PrecisionReport:
    function: str
    inputs: list[list[int]]
    results: list[PrecisionResult]
    f32_seconds: float

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def verdict(self) -> str:
        """The report's: departs before any failure to answer, which comes before ok."""
        found = {r.verdict for r in self.results}
        return next((v for v in (DEPARTS, CANNOT_BUILD, CANNOT_RUN, CANNOT_TRACE) if v in found), OK)

    def to_dict(self) -> dict:
        return {"format": "npu-studio.precision", "version": 2, "ok": self.ok, "verdict": self.verdict,
                "function": self.function, "inputs": self.inputs, "f32_run_seconds": self.f32_seconds,
                "results": [r.to_dict() for r in self.results]}

    def summary_lines(self) -> list[str]:
        lines = [(f"precision of @{self.function}: {len(self.results)} demoted build(s), "
                  "each run by IREE and traced dispatch by dispatch against onnxruntime")]
        for r in self.results:
            lines += r.lines()
        lines.append(self.verdict.upper())
        return lines
