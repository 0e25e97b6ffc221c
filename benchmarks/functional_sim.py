"""Functional simulation time against the IREE CPU run of the same model.

Usage: .venv/bin/python benchmarks/functional_sim.py [--no-update]
Compiles the example and light resnet50 (temporary workspaces), runs the NPU
pipeline with the default target, then times on the same seeded inputs:
the functional simulation (every NPU dispatch interpreted tile by tile,
fallback dispatches by IREE's CPU build of the dispatch), the full `check`
(simulation plus every NPU dispatch re-run by IREE, plus the model on
IREE and onnxruntime), and the IREE CPU run of the workspace's build in a
fresh process. CPU seconds (this process plus its children) are reported
next to wall seconds: the CI machine is shared, so CPU time is the stable figure.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from perf_doc import timed, write_section  # noqa: E402

from npu_studio.core.npu.numerics import check  # noqa: E402
from npu_studio.core.npu.numerics.functional_sim import FunctionalSim  # noqa: E402
from npu_studio.core.npu.plan.passes import run_npu_pipeline  # noqa: E402
from npu_studio.core.run.dispatches.iree_dispatches import (  # noqa: E402
    CACHE_DIR,
    DispatchRunner,
    build,
)
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb  # noqa: E402
from npu_studio.core.workspace.workspace import compile_model  # noqa: E402
from tests.conftest import EXAMPLE, light_zoo_dir  # noqa: E402


def measure(model: Path, tmp: Path) -> dict:
    ws = compile_model(model, tmp / model.stem)
    flow = ws.snapshot_path("flow")
    program = run_npu_pipeline(flow)
    sig = pick_function(ws.snapshot_path("input"))
    inputs = random_inputs(sig, 0)
    vmfb, build_wall, build_cpu = timed(lambda: build(flow, ws.root / CACHE_DIR))
    with DispatchRunner(vmfb) as runner:
        sim = FunctionalSim(flow, program, ws.params_path, runner, compare=False)
        result, sim_wall, sim_cpu = timed(lambda: sim.run(sig.name, inputs))
    _, iree_wall, iree_cpu = timed(lambda: run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path))
    report, check_wall, check_cpu = timed(lambda: check(ws, program, inputs))
    npu = [d for d in result.dispatches if d.computed_by == "npu"]
    return {
        "model": model.stem, "dispatches": len(result.dispatches), "npu": len(npu),
        "tiles": sum(d.tiles for d in npu), "build": (build_wall, build_cpu), "sim": (sim_wall, sim_cpu),
        "iree": (iree_wall, iree_cpu), "check": (check_wall, check_cpu), "report": report,
    }


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in (EXAMPLE, light_zoo_dir() / "light_resnet50.onnx"):
            rows.append(measure(model, Path(tmp)))
            print(rows[-1]["model"], {k: v for k, v in rows[-1].items() if k != "report"}, flush=True)
    lines = [
        "## Functional simulation (issue 9)",
        "",
        "`benchmarks/functional_sim.py`: default NPU target, seeded inputs, one run; "
        "CPU seconds include child processes.",
        "",
        "| model | dispatches (NPU) | tiles | functional sim | IREE CPU run (fresh process) | **sim / IREE (CPU)** "
        "| `check` total | dispatch build (once, cached) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        (sw, sc), (iw, ic), (cw, cc), (bw, bc) = r["sim"], r["iree"], r["check"], r["build"]
        lines.append(f"| {r['model']} | {r['dispatches']} ({r['npu']}) | {r['tiles']} | {sc:.2f} s CPU ({sw:.2f} s wall) "
                     f"| {ic:.2f} s CPU ({iw:.2f} s wall) | **{sc / ic:.1f}x** | {cc:.2f} s CPU ({cw:.2f} s wall) "
                     f"| {bc:.2f} s CPU ({bw:.2f} s wall) |")
    lines += ["", "Max errors of `check` on these runs:", ""]
    for r in rows:
        rep = r["report"]
        worst = max((d.max_error / max(1.0, d.scale) for d in rep.dispatches if d.max_error is not None), default=0.0)
        lines.append(f"- {r['model']}: vs IREE {rep.vs_iree.max_error:.3g}, vs onnxruntime "
                     f"{rep.vs_onnxruntime.max_error:.3g}, worst dispatch vs IREE {worst:.2g} relative; "
                     f"{'ok' if rep.ok else 'MISMATCH'}")
    lines += [
        "",
        "The simulation interprets every NPU dispatch tile by tile in numpy (a conv's window is a strided",
        "view, contractions go to BLAS through `einsum`). The IREE figure is what `npu-studio run` costs:",
        "a fresh Python process that loads the runtime and the module, then runs compiled code.",
        "`check` adds one IREE run per NPU dispatch on the simulation's inputs, the model on IREE and on",
        "onnxruntime. The dispatch build (`iree-compile --compile-from=flow` of one function per dispatch)",
        "costs about one model compile and is cached in the workspace (npu/check/).",
    ]
    section = "\n".join(lines)
    print(section)
    if "--no-update" not in sys.argv:
        write_section("functional-sim-bench", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
