"""Compile-time debugging (issue 27): what the profile, per-executable compiles and compare cost.

    .venv/bin/python benchmarks/compile_debugging.py [--runs 3]

On light resnet50 and the bundled example, compiled into fresh workspaces:
- the workspace compile with and without `--mlir-timing` added (runs alternate, medians): the cost of
  recording MLIR's timers in every compile;
- the per-phase profile (`npu-studio profile`: each phase compiled again alone) against the compile;
- per-executable compile of resnet50 on two jobs (`profile --executables`) against the whole compile;
- `compare` of two resnet50 variants (main and --iree-opt-level=O3, outputs run), in seconds.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf_doc import write_section  # noqa: E402
from npu_studio.core.compile.compiler import CompileJob  # noqa: E402
from npu_studio.core.debug.build_compare import compare  # noqa: E402
from npu_studio.core.debug.compile_profile import ProfileJob  # noqa: E402
from npu_studio.core.debug.executable_times import ExecutableTimesJob  # noqa: E402
from npu_studio.core.workspace import variants  # noqa: E402
from npu_studio.core.workspace.workspace import compile_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def models() -> dict[str, Path]:
    import onnx

    zoo = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return {"example": ROOT / "resources" / "examples" / "single_conv.onnx", "resnet50": zoo / "light_resnet50.onnx"}


def timed_compile(ws, out: Path, extra: tuple[str, ...]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the compiler process): CPU time hardly moves with other jobs' load."""
    options = ws.compile_options(extra_flags=(*ws.compile_options().extra_flags, *extra))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    CompileJob(ws.imported_path, out, options).run()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows, lines = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, model in models().items():
            ws = compile_model(model, tmp / name / "ws")
            plain, timing = [], []
            for i in range(args.runs):  # alternate so machine noise hits both alike
                plain.append(timed_compile(ws, tmp / name / f"p{i}", ()))
                timing.append(timed_compile(ws, tmp / name / f"t{i}", ("--mlir-timing",)))
            p, t = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in timing)
            pc, tc = statistics.median(c for _, c in plain), statistics.median(c for _, c in timing)
            t0 = time.perf_counter()
            prof = ProfileJob(ws).run()
            profile_s = time.perf_counter() - t0
            rows.append(f"| {name} | {p:.2f} | {t:.2f} | {t / p:.3f} | {pc:.2f} | {tc:.2f} | **{tc / pc:.3f}** "
                        f"| {profile_s:.2f} | {profile_s / p:.2f} |")
            if name == "resnet50":
                t0 = time.perf_counter()
                times = ExecutableTimesJob(ws, jobs=2).run()
                exe_s = time.perf_counter() - t0
                slowest = times.times[0]
                lines.append(f"- per-executable compile of resnet50, {len(times.times)} executables on 2 jobs: "
                             f"{exe_s:.2f} s, **{exe_s / p:.2f}x** the whole compile ({p:.2f} s); slowest "
                             f"{slowest.name} {slowest.seconds:.2f} s; sum of the executables' times "
                             f"{sum(x.seconds or 0 for x in times.times):.2f} s.")
                variants.create(ws, "o3", "--iree-opt-level=O3")
                variants.build(ws, "o3")
                t0 = time.perf_counter()
                r = compare(ws, "main", "o3")
                cmp_s = time.perf_counter() - t0
                lines.append(f"- `compare` of two resnet50 builds (main, --iree-opt-level=O3; both modules run): "
                             f"**{cmp_s:.2f} s** (first difference: {r.first_difference or 'none'}).")
                top = prof.phases["executable-targets"].passes[0]
                lines.append(f"- resnet50 executable-targets: top pass {top.name} {top.wall:.2f} s of "
                             f"{prof.phases['executable-targets'].total_wall:.2f} s.")
    body = "\n".join([
        "## Compile-time debugging (issue 27)",
        "",
        f"`benchmarks/compile_debugging.py`, one run ({args.runs} alternating compiles each, medians). "
        "`--mlir-timing` in every compile costs the ratio below; a per-phase profile needs each phase compiled "
        "on its own (MLIR merges the timers of one run across phases), so `npu-studio profile` records it on "
        "request, single-threaded. The machine is shared with other jobs, so wall times swing by tens of percent "
        "between runs; the compiler's CPU time (user + system, from getrusage) is the steadier measure of what "
        "`--mlir-timing` costs.",
        "",
        "| model | compile wall (s) | with --mlir-timing | wall ratio | compile CPU (s) | with --mlir-timing "
        "| **CPU ratio** | profile wall (s) | profile / compile |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *lines,
    ])
    write_section("compile-debugging-bench", body)
    print(body)


if __name__ == "__main__":
    main()
