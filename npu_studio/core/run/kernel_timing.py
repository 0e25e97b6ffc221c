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
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..compile import toolchain
from ..compile.compiler import EXECUTABLES_DIR, target_flags
from ..errors import StudioError

DEFAULT_REPETITIONS = 5
DEFAULT_MIN_TIME = 0.2  # seconds per repetition; google-benchmark picks the iteration count
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


class TimingFailed(StudioError):
    pass


@dataclass
class Timing:
    samples_ms: list[float]  # wall time of one call, one value per repetition

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def spread(self) -> float:
        """(max - min) / median over the repetitions."""
        return (max(self.samples_ms) - min(self.samples_ms)) / self.median_ms if self.median_ms else 0.0

    def to_json(self) -> dict:
        return {"samples_ms": self.samples_ms, "median_ms": self.median_ms, "spread": self.spread}

    def __str__(self) -> str:
        return f"{self.median_ms:.3f} ms (spread {100 * self.spread:.0f}%, n={len(self.samples_ms)})"


@dataclass
class KernelTiming:
    executable: str
    plain: Timing | None = None
    substituted: Timing | None = None
    model_plain: Timing | None = None
    model_substituted: Timing | None = None
    note: str = ""  # why the executable could not be timed alone, if it could not

    @staticmethod
    def _ratio(a: Timing | None, b: Timing | None) -> float | None:
        return b.median_ms / a.median_ms if a and b and a.median_ms else None

    @property
    def ratio(self) -> float | None:
        """Substituted / plain median kernel time (below 1: faster)."""
        return self._ratio(self.plain, self.substituted)

    @property
    def model_ratio(self) -> float | None:
        return self._ratio(self.model_plain, self.model_substituted)

    def to_json(self) -> dict:
        data = {"executable": self.executable, "note": self.note}
        for k in ("plain", "substituted", "model_plain", "model_substituted"):
            t = getattr(self, k)
            data[k] = t.to_json() if t else None
        data.update(ratio=self.ratio, model_ratio=self.model_ratio)
        return data

    def format(self) -> str:
        lines = []
        if self.plain and self.substituted:
            lines.append(f"kernel @{self.executable}: plain {self.plain}, substituted {self.substituted}, "
                         f"ratio {self.ratio:.2f}")
        else:
            lines.append(f"kernel @{self.executable}: {self.note}")
        if self.model_plain and self.model_substituted:
            lines.append(f"whole model: plain {self.model_plain}, substituted {self.model_substituted}, "
                         f"ratio {self.model_ratio:.2f}")
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
    cmd = [str(toolchain.runtime_tool("iree-benchmark-module")), *args, "--device=local-task",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}s",
           "--benchmark_format=json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise TimingFailed(what, lines[-1] if lines else f"iree-benchmark-module exited {proc.returncode}")
    return parse_benchmark_json(proc.stdout)


def time_executable(bench_mlir: Path, target: str, *, repetitions: int = DEFAULT_REPETITIONS,
                    min_time: float = DEFAULT_MIN_TIME) -> Timing:
    with tempfile.TemporaryDirectory(prefix="npu-studio-bench-") as tmp:
        vmfb = Path(tmp) / "bench.vmfb"
        cmd = [str(toolchain.iree_compile()), str(bench_mlir), "--compile-from=executable-configurations",
               *target_flags(target), "-o", str(vmfb)]
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
            raise TimingFailed(bench_mlir, errors[0] if errors else "benchmark module did not compile")
        return _run_benchmark([f"--module={vmfb}"], bench_mlir, repetitions, min_time)


def time_model(vmfb: Path, function: str, inputs: list[np.ndarray], *, parameters: Path | None = None,
               repetitions: int = DEFAULT_REPETITIONS, min_time: float = DEFAULT_MIN_TIME) -> Timing:
    with tempfile.TemporaryDirectory(prefix="npu-studio-bench-") as tmp:
        args = [f"--module={vmfb}", f"--function={function}"]
        for i, arr in enumerate(inputs):
            path = Path(tmp) / f"input{i}.npy"
            np.save(path, arr)
            args.append(f"--input=@{path}")
        if parameters is not None:
            from ..compile.params import SCOPE

            args.append(f"--parameters={SCOPE}={parameters}")
        return _run_benchmark(args, vmfb, repetitions, min_time)


def time_substitution(ws, name: str, plain_folder: Path, *, inputs: list[np.ndarray] | None = None,
                      function: str | None = None, repetitions: int = DEFAULT_REPETITIONS,
                      min_time: float = DEFAULT_MIN_TIME, whole_model: bool = True) -> KernelTiming:
    """Time executable @name in the plain build and in the workspace's current build."""
    result = KernelTiming(name)
    plain_bench, sub_bench = benchmark_module(plain_folder, name), benchmark_module(ws.root, name)
    if plain_bench is None or sub_bench is None:
        result.note = ("cannot be benchmarked on its own: IREE wrote no standalone benchmark for it "
                       "(dynamic shapes or inputs it cannot synthesize)")
    else:
        result.plain = time_executable(plain_bench, ws.manifest.target, repetitions=repetitions, min_time=min_time)
        result.substituted = time_executable(sub_bench, ws.manifest.target, repetitions=repetitions,
                                             min_time=min_time)
    if whole_model and inputs is not None and function is not None:
        kw = dict(parameters=ws.params_path, repetitions=repetitions, min_time=min_time)
        result.model_plain = time_model(Path(plain_folder) / "module.vmfb", function, inputs, **kw)
        result.model_substituted = time_model(ws.vmfb_path, function, inputs, **kw)
    return result
