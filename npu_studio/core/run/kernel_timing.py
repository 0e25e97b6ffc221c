"""Time one executable, plain and substituted, on its own and in the whole model.

The compile dumps a standalone benchmark module per executable
(`--iree-hal-dump-executable-benchmarks-to`, see core/compile/compiler.py): the
configured executable plus a function that dispatches it on buffers of the
right size. It is compiled with `--compile-from=executable-configurations`
(it is already configured; compiling it from the start re-runs strategy
selection on configured IR, which fails) and run with
`iree-benchmark-module` from iree-base-runtime. The whole model is timed
with the same tool on the workspace's build.

IREE writes no benchmark module for an executable it cannot dispatch
alone (dynamic shapes, constants it cannot synthesize); `KernelTiming.note`
then says so and only the whole model is timed.

Repetitions (each one a call timed by google-benchmark over at least
`min_time` seconds) come in batches of BATCH, plain and substituted in
turn so that a change of machine load hits both (a timing that has settled
keeps pace with the other), until each timing has settled: at least MIN_REPETITIONS repetitions whose interquartile range is
at most TARGET_SPREAD of their median. A timing that does not settle within
its repetition or time limit stops and says so. Two timings differ
measurably only when both have settled (MIN_REPETITIONS repetitions, spread
within TARGET_SPREAD) and the middle halves of their runs (first to third
quartile) do not overlap; otherwise the report says "no measurable
difference" and why, rather than a ratio (`difference`, the one rule).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..lazy_import import lazy_module

np = lazy_module("numpy")

from .. import processes
from ..compile import toolchain
from ..compile.compiler import EXECUTABLES_DIR
from ..compile.options import target_flags
from ..errors import StudioError
from ..workspace import trust

TARGET_SPREAD = 0.10  # interquartile range / median at which a timing has settled
MIN_REPETITIONS = 10  # fewer never settle and never call a difference
MAX_REPETITIONS = 40
MAX_SECONDS = 30.0  # of benchmark runs per timing; checked between batches
BATCH = 5  # repetitions per iree-benchmark-module run
DEFAULT_MIN_TIME = 0.1  # seconds per repetition; google-benchmark picks the iteration count
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


class TimingFailed(StudioError):
    pass


@dataclass
class Timing:
    samples_ms: list[float]  # wall time of one call, one value per repetition
    seconds: float = 0.0  # wall time the benchmark runs took
    stopped: str = ""  # why the repetitions stopped: "settled" or the limit reached

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def quartiles_ms(self) -> tuple[float, float]:
        """First and third quartile (inclusive method: the samples' own range for two samples' ends)."""
        if len(self.samples_ms) < 2:
            return self.samples_ms[0], self.samples_ms[0]
        q1, _, q3 = statistics.quantiles(self.samples_ms, n=4, method="inclusive")
        return q1, q3

    @property
    def spread(self) -> float:
        """Interquartile range / median: how far the middle half of the repetitions spreads."""
        q1, q3 = self.quartiles_ms
        return (q3 - q1) / self.median_ms if self.median_ms else 0.0

    @property
    def settled(self) -> bool:
        return len(self.samples_ms) >= MIN_REPETITIONS and self.spread <= TARGET_SPREAD

    def to_json(self) -> dict:
        q1, q3 = self.quartiles_ms
        return {"samples_ms": self.samples_ms, "median_ms": self.median_ms, "q1_ms": q1, "q3_ms": q3,
                "spread": self.spread, "settled": self.settled, "stopped": self.stopped,
                "seconds": self.seconds}

    def __str__(self) -> str:
        text = f"{self.median_ms:.3f} ms (IQR {100 * self.spread:.0f}%, n={len(self.samples_ms)}"
        if not self.settled:
            text += ", not settled" + (f": {self.stopped}" if self.stopped else "")
        return text + ")"


def next_batch(t: Timing, *, min_repetitions: int = MIN_REPETITIONS, max_repetitions: int = MAX_REPETITIONS,
               max_seconds: float = MAX_SECONDS) -> int:
    """How many more repetitions `t` needs; 0 when it is done, with `t.stopped` saying why."""
    n = len(t.samples_ms)
    if n >= min_repetitions and t.settled:
        t.stopped = "settled"
    elif n >= max_repetitions:
        t.stopped = f"stopped at {max_repetitions} repetitions"
    elif n and t.seconds >= max_seconds:
        t.stopped = f"stopped at the {max_seconds:g} s limit"
    else:
        return min(BATCH, max_repetitions - n)
    return 0


@dataclass
class Difference:
    ratio: float | None  # b / a, medians
    measurable: bool
    why: str  # why it is not measurable, or ""

    def __str__(self) -> str:
        if self.ratio is None:
            return ""
        if self.measurable:
            return f"ratio {self.ratio:.2f}"
        return f"no measurable difference ({self.why})"


def difference(a: Timing | None, b: Timing | None) -> Difference:
    """Is b measurably faster or slower than a? See the module doc for the rule."""
    if not a or not b or not a.median_ms:
        return Difference(None, False, "not timed")
    ratio = b.median_ms / a.median_ms
    na, nb = len(a.samples_ms), len(b.samples_ms)
    if min(na, nb) < MIN_REPETITIONS:
        return Difference(ratio, False, f"too few repetitions, {na} and {nb} of the {MIN_REPETITIONS} needed")
    if not (a.settled and b.settled):  # the noise is as large as what it would measure
        return Difference(ratio, False, f"the timings did not settle: IQR {100 * a.spread:.0f}% and "
                                        f"{100 * b.spread:.0f}%, over the {100 * TARGET_SPREAD:.0f}% needed")
    (a1, a3), (b1, b3) = a.quartiles_ms, b.quartiles_ms
    if a3 < b1 or b3 < a1:
        return Difference(ratio, True, "")
    return Difference(ratio, False, "the middle halves of the runs overlap")


@dataclass
class KernelTiming:
    executable: str
    plain: Timing | None = None
    substituted: Timing | None = None
    model_plain: Timing | None = None
    model_substituted: Timing | None = None
    note: str = ""  # why the executable could not be timed alone, if it could not

    @property
    def ratio(self) -> float | None:
        """Substituted / plain median kernel time (below 1: faster)."""
        return self.kernel_difference.ratio

    @property
    def model_ratio(self) -> float | None:
        return self.model_difference.ratio

    @property
    def kernel_difference(self) -> Difference:
        return difference(self.plain, self.substituted)

    @property
    def model_difference(self) -> Difference:
        return difference(self.model_plain, self.model_substituted)

    def to_json(self) -> dict:
        data = {"executable": self.executable, "note": self.note}
        for k in ("plain", "substituted", "model_plain", "model_substituted"):
            t = getattr(self, k)
            data[k] = t.to_json() if t else None
        k, m = self.kernel_difference, self.model_difference
        data.update(ratio=k.ratio, measurable=k.measurable, difference=str(k),
                    model_ratio=m.ratio, model_measurable=m.measurable, model_difference=str(m))
        return data

    def format(self) -> str:
        lines = []
        if self.plain and self.substituted:
            lines.append(f"kernel @{self.executable}: plain {self.plain}, substituted {self.substituted}: "
                         f"{self.kernel_difference}")
        else:
            lines.append(f"kernel @{self.executable}: {self.note}")
        if self.model_plain and self.model_substituted:
            lines.append(f"whole model: plain {self.model_plain}, substituted {self.model_substituted}: "
                         f"{self.model_difference}")
        return "\n".join(lines)


def benchmark_module(build_folder: Path, name: str) -> Path | None:
    """The dumped benchmark module of executable @name in a build folder, if IREE wrote one."""
    from ..executables.catalog import _by_symbol

    return _by_symbol(Path(build_folder) / EXECUTABLES_DIR / "benchmarks").get(name)


def parse_benchmark_json(text: str) -> Timing:
    """Per-repetition wall time of one call; several benchmarks in one module (one per export) add up."""
    data = json.loads(text)
    per_rep: dict[int, float] = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue  # google-benchmark's own mean/median/stddev rows
        ms = float(b["real_time"]) * _TO_MS[b.get("time_unit", "ns")]
        rep = int(b.get("repetition_index", 0))
        per_rep[rep] = per_rep.get(rep, 0.0) + ms
    if not per_rep:
        raise TimingFailed(None, "iree-benchmark-module reported no benchmark")
    return Timing([per_rep[k] for k in sorted(per_rep)])


def _run_benchmark(args: list[str], what: Path, repetitions: int, min_time: float) -> Timing:
    trust.require_for_path(what, f"timing {Path(what).name}")
    cmd = [str(toolchain.runtime_tool("iree-benchmark-module")), *args, "--device=local-task",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}s",
           "--benchmark_format=json"]
    proc = processes.run_child(cmd)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise TimingFailed(what, lines[-1] if lines else f"iree-benchmark-module exited {proc.returncode}")
    return parse_benchmark_json(proc.stdout)


@dataclass
class Limits:
    """How long timings repeat (see the module doc)."""
    min_repetitions: int = MIN_REPETITIONS
    max_repetitions: int = MAX_REPETITIONS
    max_seconds: float = MAX_SECONDS
    min_time: float = DEFAULT_MIN_TIME


def time_pair(args_a: list[str], args_b: list[str], what: tuple[Path, Path], limits: Limits) -> tuple[Timing, Timing]:
    """Time two benchmark commands in alternating batches until both are done (`next_batch`).

    A timing that has settled keeps pace with the other (within its own limits): a change of
    machine load while the other repeats then hits both, not only the one still running."""
    timings = (Timing([]), Timing([]))
    while True:
        batches = [next_batch(t, min_repetitions=limits.min_repetitions, max_repetitions=limits.max_repetitions,
                              max_seconds=limits.max_seconds) for t in timings]
        if not any(batches):
            return timings
        batches = [b or (min(BATCH, limits.max_repetitions - len(t.samples_ms))
                         if t.stopped == "settled" and t.seconds < limits.max_seconds else 0)
                   for b, t in zip(batches, timings)]
        for t, args, path, count in zip(timings, (args_a, args_b), what, batches):
            if count:
                start = time.perf_counter()
                t.samples_ms += _run_benchmark(args, path, count, limits.min_time).samples_ms
                t.seconds += time.perf_counter() - start


def _compile_benchmark(bench_mlir: Path, target: str, vmfb: Path) -> list[str]:
    cmd = [str(toolchain.iree_compile()), str(bench_mlir), "--compile-from=executable-configurations",
           *target_flags(target), "-o", str(vmfb)]
    proc = processes.run_child(cmd)
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
        raise TimingFailed(bench_mlir, errors[0] if errors else "benchmark module did not compile")
    return [f"--module={vmfb}"]


def _model_args(vmfb: Path, function: str, inputs: list[np.ndarray], parameters: Path | None,
                folder: Path) -> list[str]:
    args = [f"--module={vmfb}", f"--function={function}"]
    for i, arr in enumerate(inputs):
        path = folder / f"input{i}.npy"
        np.save(path, arr)
        args.append(f"--input=@{path}")
    if parameters is not None:
        from ..compile.params import SCOPE

        args.append(f"--parameters={SCOPE}={parameters}")
    return args


def time_substitution(ws, name: str, plain_folder: Path, *, inputs: list[np.ndarray] | None = None,
                      function: str | None = None, repetitions: int = MIN_REPETITIONS,
                      max_repetitions: int = MAX_REPETITIONS, max_seconds: float = MAX_SECONDS,
                      min_time: float = DEFAULT_MIN_TIME, whole_model: bool = True) -> KernelTiming:
    """Time executable @name in the plain build and in the workspace's current build
    (at least `repetitions` each, more until settled, see the module doc)."""
    limits = Limits(repetitions, max(repetitions, max_repetitions), max_seconds, min_time)
    result = KernelTiming(name)
    plain_bench, sub_bench = benchmark_module(plain_folder, name), benchmark_module(ws.root, name)
    with tempfile.TemporaryDirectory(prefix="npu-studio-bench-") as tmp:
        folder = Path(tmp)
        if plain_bench is None or sub_bench is None:
            result.note = ("cannot be benchmarked on its own: IREE wrote no standalone benchmark for it "
                           "(dynamic shapes or inputs it cannot synthesize)")
        else:
            args = [_compile_benchmark(b, ws.manifest.target, folder / f"{k}.vmfb")
                    for k, b in (("plain", plain_bench), ("substituted", sub_bench))]
            result.plain, result.substituted = time_pair(*args, (plain_bench, sub_bench), limits)
        if whole_model and inputs is not None and function is not None:
            plain_vmfb = Path(plain_folder) / "module.vmfb"
            args = [_model_args(v, function, inputs, ws.params_path, folder) for v in (plain_vmfb, ws.vmfb_path)]
            result.model_plain, result.model_substituted = time_pair(*args, (plain_vmfb, ws.vmfb_path), limits)
    return result
