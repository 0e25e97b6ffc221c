"""Phase-by-phase compile vs. one plain `iree-compile --dump-compilation-phases-to` run.

Both compile light resnet50 (imported once) for llvm-cpu with the same
flags; runs alternate so machine noise hits both alike. The ratio of the
medians goes into docs/PERFORMANCE.md.

    .venv/bin/python benchmarks/compile_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf_doc import write_section  # noqa: E402
from npu_studio.core.compile.compiler import CompileJob, build_command  # noqa: E402
from npu_studio.core.compile.importer import import_model  # noqa: E402


def resnet50() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def plain_run(mlir: Path, work: Path) -> float:
    out = work / "plain"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    # The same command our compile runs, minus nothing: the difference is all ours.
    cmd = build_command(mlir, out / "phases", out / "module.vmfb", reproducer=out / "repro.mlir")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def studio_run(mlir: Path, work: Path) -> float:
    out = work / "studio"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    result = CompileJob(mlir, out).run()
    elapsed = time.perf_counter() - t0
    assert len(result.phases) == 12
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        mlir = import_model(resnet50(), work / "resnet50.mlir").mlir_path
        plain_run(mlir, work)  # warm the page cache
        plain, studio = [], []
        for _ in range(args.runs):
            plain.append(plain_run(mlir, work))
            studio.append(studio_run(mlir, work))
    p, s = statistics.median(plain), statistics.median(studio)
    ratio = s / p
    print(f"plain iree-compile: {p:.2f} s  phase-by-phase: {s:.2f} s  ratio {ratio:.3f}")
    write_section("compile-bench", f"""## Phase-by-phase compile overhead

`benchmarks/compile_overhead.py`: light resnet50 for llvm-cpu, {args.runs} alternating runs, medians.

| | seconds |
|---|---|
| plain `iree-compile --dump-compilation-phases-to` | {p:.2f} |
| NPU Studio compile (per-phase times, progress, staging) | {s:.2f} |
| **ratio** (aim: at most 1.10) | **{ratio:.3f}** |

Per-phase times come from the modification times of the snapshots one
`iree-compile` process writes as each phase ends, so the only extra work is a
directory poll every 50 ms and moving the finished files into the workspace.
""")


if __name__ == "__main__":
    main()
