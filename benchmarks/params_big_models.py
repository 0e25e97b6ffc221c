"""Real-size weights: compile time, peak memory and workspace size with a parameter archive.

For the two generated models of benchmarks/big_models.py (resnet50 with
about 100 MB of weights, a transformer block with about 300 MB):

- `npu-studio compile` (import with weights in `params.irpa`, then the
  phase-by-phase compile with every snapshot kept) in a fresh process;
- peak memory: the largest resident set of any process of that run (the
  importer's Python, `iree-compile`), against the weights' size;
- compile time: our compile step (from the manifest) against a plain
  `iree-compile` without dumps or debug info on the same imported module;
- workspace size, the kept source model (a hard link) not counted.

For contrast, resnet50 is also imported with every weight inline in the IR.

    .venv/bin/python benchmarks/params_big_models.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.big_models import resnet50_real, transformer_block, weight_bytes  # noqa: E402
from benchmarks.perf_doc import write_section  # noqa: E402
from npu_studio.core.compile.options import target_flags  # noqa: E402
from npu_studio.core.compile.toolchain import iree_compile  # noqa: E402

# Runs a command and prints the peak RSS (KiB) of its largest process, waited-for descendants included.
PEAK = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)")
MB = 1e6


def measured(cmd: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of `cmd` in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PEAK, *cmd], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return elapsed, int(proc.stdout.strip().splitlines()[-1]) * 1024


def tree_size(root: Path, skip: str = "source") -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and skip not in p.relative_to(root).parts)


def bench(model: Path, work: Path, inline: bool = False) -> dict:
    ws = work / (model.stem + ("-inline" if inline else ""))
    cmd = [sys.executable, "-m", "npu_studio", "compile", str(model), "--workspace", str(ws), "--json"]
    if inline:
        cmd.append("--inline-weights")
    wall, peak = measured(cmd)
    manifest = json.loads((ws / "manifest.json").read_text())
    plain_cmd = [str(iree_compile()), str(ws / manifest["imported"]), *target_flags("llvm-cpu"), "-o", str(work / "plain.vmfb")]
    plain, plain_peak = measured(plain_cmd)
    snapshots = sorted((ws / "phases").glob("*.mlir"), key=lambda p: p.stat().st_size)
    return {
        "model": model.stem, "inline": inline, "weights": weight_bytes(model), "wall": wall, "peak": peak,
        "import": manifest["import_seconds"], "compile": manifest["total_seconds"], "plain": plain,
        "plain_peak": plain_peak, "workspace": tree_size(ws), "largest_snapshot": snapshots[-1].stat().st_size,
    }


def baseline_peak(work: Path) -> int:
    """Peak of the same run on the bundled example (a few KB of weights): the tools' own footprint."""
    from npu_studio.resources import EXAMPLE_MODEL

    cmd = [sys.executable, "-m", "npu_studio", "compile", str(EXAMPLE_MODEL), "--workspace", str(work / "example")]
    return measured(cmd)[1]


def main() -> None:
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        work = Path(tmp)
        base = baseline_peak(work)
        models = [resnet50_real(work / "resnet50_real.onnx"), transformer_block(work / "transformer_block.onnx")]
        rows = [bench(m, work) for m in models] + [bench(models[0], work, inline=True)]
    lines = []
    for r in rows:
        w = r["weights"]
        print(json.dumps(r))
        lines.append(
            f"| {r['model']}{' (weights inline)' if r['inline'] else ''} | {w / MB:.0f} | {r['import']:.1f} | "
            f"{r['compile']:.1f} | {r['plain']:.1f} | **{r['compile'] / r['plain']:.2f}** | "
            f"{r['peak'] / MB:.0f} | **{r['peak'] / w:.2f}** | {(r['peak'] - base) / w:.2f} | "
            f"{r['plain_peak'] / MB:.0f} | {r['workspace'] / MB:.0f} | "
            f"{r['workspace'] / w:.2f} | {r['largest_snapshot'] / MB:.2f} |")
    write_section("params-bench", f"""## Real-size weights: parameter archive (issue 16)

`benchmarks/params_big_models.py` on the models of `benchmarks/big_models.py` (random seeded weights,
f32): `npu-studio compile` in a fresh process, weights of 64 KiB and more in `params.irpa`.
Compile = our phase-by-phase compile (12 snapshots kept) of the imported module; plain = `iree-compile`
of the same module without dumps or debug info. Peak = the largest resident set of any process of the
run. Workspace = everything but the kept source model (a hard link).

| model | weights MB | import s | compile s | plain s | compile/plain (aim <= 1.15) | peak MB | peak/weights (aim <= 2) | (peak - baseline)/weights | plain iree-compile peak MB | workspace MB | workspace/weights | largest snapshot MB |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(lines)}

Baseline: the same run on the bundled example peaks at {base / MB:.0f} MB (Python, ONNX, the IREE
bindings and `iree-compile` themselves); the third ratio is what the weights add to it. With the
weights inline (last row, the old behaviour) every phase snapshot prints them again as hex.
""")


if __name__ == "__main__":
    main()
