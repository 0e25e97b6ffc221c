"""`npu-studio compile` vs. plain `iree-import-onnx` + `iree-compile`, whole processes.

Both sides compile light resnet50 for llvm-cpu. The plain side is two processes
(`python -m iree.compiler.tools.import_onnx`, then `iree-compile`), in two forms:
with exactly the `iree-compile` flags our compile job passes (target, phase dumps,
executable dumps: identical commands), and with the target and phase dumps only
(the issue's baseline, which counts our executable dumps as our overhead). Ours is
one `python -m npu_studio compile MODEL --workspace DIR` (import with node names
and a parameter archive, the phase-by-phase compile, publishing, the phase table).
Our package's bytecode is compiled first (untimed), as an install has it (the
environment may set PYTHONDONTWRITEBYTECODE). Runs alternate so machine noise hits
all sides alike; wall and CPU (user + system of the process tree) medians go into
docs/PERFORMANCE.md, with the in-process compile job alone for reference.

    .venv/bin/python benchmarks/compile_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf_doc import write_section  # noqa: E402
from npu_studio.core.compile.compiler import EXECUTABLES_DIR, CompileJob, build_command  # noqa: E402
from npu_studio.core.compile.importer import import_model  # noqa: E402


def resnet50() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def plain_run(mlir: Path, work: Path) -> float:
    out = work / "plain"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    # The same command our compile runs, minus nothing: the difference is all ours.
    cmd = build_command(mlir, out / "phases", out / "module.vmfb", reproducer=out / "repro.mlir",
                        executables_dir=out / EXECUTABLES_DIR)
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


def opset17(model: Path, work: Path) -> Path:
    """The model at opset 17 (untimed): iree-compile cannot lower light resnet50's opset 9
    BatchNormalization, and our importer upgrades to 17; both sides start from the same file."""
    import onnx
    from onnx import version_converter

    out = work / "resnet50-opset17.onnx"
    onnx.save(version_converter.convert_version(onnx.load(model), 17), out)
    return out


def _timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of `cmd` and every process it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def plain_process(model: Path, work: Path, executable_dumps: bool) -> tuple[float, float]:
    out = work / "plain"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    mlir = out / "model.mlir"
    w1, c1 = _timed([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o", str(mlir)])
    w2, c2 = _timed(build_command(mlir, out / "phases", out / "module.vmfb", reproducer=out / "repro.mlir",
                                  executables_dir=out / EXECUTABLES_DIR if executable_dumps else None))
    return w1 + w2, c1 + c2


def studio_process(model: Path, work: Path) -> tuple[float, float]:
    ws = work / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return _timed([sys.executable, "-m", "npu_studio", "compile", str(model), "--workspace", str(ws)], env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = opset17(resnet50(), work)
        compileall.compile_dir(Path(__file__).resolve().parents[1] / "npu_studio", quiet=1)
        plain_process(model, work, True)  # warm the page cache
        studio_process(model, work)
        same, plain, studio = [], [], []
        for _ in range(args.runs):
            same.append(plain_process(model, work, True))
            studio.append(studio_process(model, work))
            plain.append(plain_process(model, work, False))
        mlir = import_model(model, work / "resnet50.mlir").mlir_path
        job_plain = [plain_run(mlir, work) for _ in range(2)]
        job_ours = [studio_run(mlir, work) for _ in range(2)]
    pw, pc = statistics.median(p[0] for p in plain), statistics.median(p[1] for p in plain)
    qw, qc = statistics.median(p[0] for p in same), statistics.median(p[1] for p in same)
    end_load = os.getloadavg()[0]
    sw, sc = statistics.median(s[0] for s in studio), statistics.median(s[1] for s in studio)
    jp, js = min(job_plain), min(job_ours)
    print(f"whole process: plain {pw:.2f} s wall {pc:.2f} s CPU; same flags {qw:.2f} wall {qc:.2f} CPU; "
          f"npu-studio {sw:.2f} s wall {sc:.2f} s CPU; ratio wall {sw / pw:.3f} CPU {sc / pc:.3f}; "
          f"same flags: wall {sw / qw:.3f} CPU {sc / qc:.3f}; compile job alone {js / jp:.3f}")
    print("runs (wall, CPU): same", same, "studio", studio, "plain", plain)
    write_section("compile-bench", f"""## Phase-by-phase compile overhead

`benchmarks/compile_overhead.py`: light resnet50 for llvm-cpu, whole processes, {args.runs} alternating
runs of the three commands below, medians; CPU is user + system of each process tree. Load average:
{load:.1f} at the start, {end_load:.1f} at the end, on 2 cores shared with other jobs (the three alternate,
so they share the noise; the wall ratio is only as good as the machine was quiet).

| | wall s | CPU s |
|---|---|---|
| plain `iree-import-onnx` + `iree-compile` with target and phase dumps (two processes) | {pw:.2f} | {pc:.2f} |
| plain, `iree-compile` given exactly our flags (executable dumps too) | {qw:.2f} | {qc:.2f} |
| `npu-studio compile MODEL --workspace DIR` (one process) | {sw:.2f} | {sc:.2f} |
| **ratio** to plain with target and phase dumps (aim: at most 1.10) | **{sw / pw:.3f}** | **{sc / pc:.3f}** |
| ratio to plain with identical flags | {sw / qw:.3f} | {sc / qc:.3f} |

The compile job alone (in-process, imported MLIR, identical flags, best of 2): {js / jp:.3f} times the
plain `iree-compile`. Per-phase times come from the modification times of the snapshots one
`iree-compile` process writes as each phase ends. What our process adds is Python around the
compiler: interpreter start and imports, the ONNX checks and the import with node names and the
parameter archive (where the plain side runs `iree-import-onnx`), then publishing and the phase
table. Cut in issue 25: the CLI builds only the invoked command's parser; the phase table's op
counts (one MLIR parse of each of the 12 snapshots) are made on a worker thread as each snapshot
lands, so only the last one's counting follows the compiler; the previous manifest is read under
the lock and schema-checked, and `iree-compile --version` asked for the manifest, on threads while
the compiler runs; the end of `iree-compile` wakes the job at once through a pidfd (a 50 ms poll
before); the IREE runtime (about 0.1 s of imports) loads only when a weight goes to the archive.
Our input keeps ONNX node names as locations, which `--mlir-print-debuginfo` prints in every
snapshot (the plain import has none): that is compiler work the feature costs.
""")

if __name__ == "__main__":
    main()
