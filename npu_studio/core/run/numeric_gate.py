"""The numeric gate: does the substituted build compute what the plain build does?

Both builds run with `iree.runtime` in fresh processes (core/run/runner.py) on
the same inputs: seeded random ones built from the entry point's signature,
or `.npy` files the user picked. Per output the gate reports whether the
results are bit-identical, the max absolute and relative error, the max
distance in units in the last place, how many elements lie outside the
tolerance and the worst elements; for ONNX models both builds are also
compared with onnxruntime, when it is installed.

The relative error is taken over the elements whose plain value is not
zero. An element is outside tolerance T when |substituted - plain| > T * max(1, |plain|):
an absolute bound for small values, a relative one for large values.
The gate passes when no element of any output is outside.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import StudioError
from .runner import pick_function, random_inputs, run_vmfb

DEFAULT_TOLERANCE = 1e-5
WORST_COUNT = 5


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
    max_rel: float
    max_ulp: int
    outside: int
    total: int
    worst: list[WorstElement] = field(default_factory=list)
    # max |build - onnxruntime| per build, or None when not an ONNX model / no onnxruntime
    plain_vs_onnxruntime: float | None = None
    substituted_vs_onnxruntime: float | None = None

    @property
    def passed(self) -> bool:
        return self.outside == 0


@dataclass
class GateReport:
    function: str
    tolerance: float
    inputs: str  # where the inputs came from
    outputs: list[OutputComparison]
    onnxruntime: str  # "compared", or why not

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def bit_identical(self) -> bool:
        return all(o.bit_identical for o in self.outputs)

    def verdict(self) -> dict:
        """The short form kept with the substitution in the manifest and shown in its list."""
        return {"passed": self.passed, "bit_identical": self.bit_identical, "tolerance": self.tolerance,
                "max_abs": max((o.max_abs for o in self.outputs), default=0.0),
                "max_ulp": max((o.max_ulp for o in self.outputs), default=0)}

    def to_json(self) -> dict:
        data = asdict(self)
        data.update(passed=self.passed, bit_identical=self.bit_identical)
        return data

    def format(self) -> str:
        lines = [f"@{self.function} on {self.inputs}, tolerance {self.tolerance:g}"]
        for o in self.outputs:
            head = f"output{o.output} {o.dtype} {'x'.join(map(str, o.shape))}: "
            if o.bit_identical:
                head += "bit-identical"
            else:
                head += (f"max abs {o.max_abs:.6g}, max rel {o.max_rel:.6g}, max ULP {o.max_ulp}, "
                         f"{o.outside} of {o.total} outside tolerance")
            lines.append(head)
            for w in o.worst if not o.bit_identical else ():
                lines.append(f"  at {list(w.index)}: plain {w.plain:.9g}, substituted {w.substituted:.9g}")
            if o.plain_vs_onnxruntime is not None:
                lines.append(f"  vs onnxruntime: plain max abs {o.plain_vs_onnxruntime:.6g}, "
                             f"substituted max abs {o.substituted_vs_onnxruntime:.6g}")
        if self.onnxruntime != "compared":
            lines.append(f"onnxruntime: {self.onnxruntime}")
        lines.append("verdict: " + ("PASS (bit-identical)" if self.bit_identical
                                    else "PASS" if self.passed else "FAIL"))
        return "\n".join(lines)


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


def compare_arrays(plain: np.ndarray, sub: np.ndarray, tolerance: float, output: int = 0) -> OutputComparison:
    if plain.shape != sub.shape or plain.dtype != sub.dtype:
        raise StudioError(None, f"output{output}: plain build gives {plain.dtype}{list(plain.shape)}, "
                                f"substituted build {sub.dtype}{list(sub.shape)}")
    identical = plain.tobytes() == sub.tobytes()
    p64, s64 = plain.astype(np.float64), sub.astype(np.float64)
    diff = np.abs(s64 - p64)
    nonzero = p64 != 0
    rel = np.where(nonzero, diff / np.where(nonzero, np.abs(p64), 1.0), 0.0)
    outside = diff > tolerance * np.maximum(1.0, np.abs(p64))
    worst = []
    if not identical and diff.size:
        k = min(WORST_COUNT, diff.size)
        flat = np.argpartition(diff.ravel(), -k)[-k:]
        for i in flat[np.argsort(-diff.ravel()[flat])]:
            idx = tuple(int(x) for x in np.unravel_index(int(i), diff.shape))
            worst.append(WorstElement(idx, float(p64[idx]), float(s64[idx]), float(diff[idx])))
    return OutputComparison(
        output, tuple(plain.shape), str(plain.dtype), identical,
        float(diff.max()) if diff.size else 0.0, float(rel.max()) if rel.size else 0.0,
        int(ulp_distance(plain, sub).max()) if diff.size else 0, int(outside.sum()), int(diff.size), worst,
    )


def load_inputs(paths: list[Path], sig) -> list[np.ndarray]:
    if len(paths) != len(sig.inputs):
        raise StudioError(None, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(paths)} .npy files")
    arrays = []
    for path, spec in zip(paths, sig.inputs):
        try:
            arr = np.load(path)
        except (OSError, ValueError) as exc:
            raise StudioError(path, f"cannot read .npy: {exc}") from None
        want = tuple(spec.shape)
        if arr.dtype != spec.numpy_dtype or any(d is not None and d != s for d, s in zip(want, arr.shape)) \
                or len(want) != arr.ndim:
            raise StudioError(path, f"holds {arr.dtype}{list(arr.shape)}; @{sig.name} expects {spec}")
        arrays.append(arr)
    return arrays


def compare_builds(ws, plain_vmfb: Path, *, input_files: list[Path] | None = None,
                   tolerance: float = DEFAULT_TOLERANCE, seed: int = 0) -> GateReport:
    """Run the plain build and the workspace's current build on the same inputs and compare."""
    if tolerance < 0:
        raise StudioError(None, f"tolerance must not be negative, got {tolerance}")
    sig = pick_function(ws.snapshot_path("input"))
    if input_files:
        inputs = load_inputs(list(input_files), sig)
        origin = ", ".join(Path(p).name for p in input_files)
    else:
        inputs = random_inputs(sig, seed)
        origin = f"seeded random inputs (seed {seed})"
    plain = run_vmfb(plain_vmfb, sig.name, inputs, parameters=ws.params_path)
    sub = run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)
    outputs = [compare_arrays(p, s, tolerance, i) for i, (p, s) in enumerate(zip(plain, sub))]
    note = _against_onnxruntime(ws, inputs, plain, sub, outputs)
    return GateReport(sig.name, tolerance, origin, outputs, note)


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
        r = np.asarray(r, dtype=np.float64)
        o.plain_vs_onnxruntime = float(np.abs(p.astype(np.float64) - r).max()) if r.size else 0.0
        o.substituted_vs_onnxruntime = float(np.abs(s.astype(np.float64) - r).max()) if r.size else 0.0
    return "compared"


def gate_substitution(ws, name: str, kind: str, *, input_files: list[Path] | None = None,
                      tolerance: float = DEFAULT_TOLERANCE, seed: int = 0, plain_folder: Path | None = None,
                      ) -> GateReport:
    """Compare the current build with the plain one and keep the verdict with the substitution."""
    from ..executables.substitution import plain_build, record_verdict

    folder = plain_folder or plain_build(ws)
    report = compare_builds(ws, folder / "module.vmfb", input_files=input_files, tolerance=tolerance, seed=seed)
    record_verdict(ws, name, kind, report.verdict())
    return report
