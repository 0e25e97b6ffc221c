"""Model debugging (issue 28): `trace` against one IREE run and one onnxruntime run; `precision` per variant.

Usage: .venv/bin/python benchmarks/model_debugging.py [--no-update]
Compiles light resnet50 into a temporary workspace. On the same seeded
inputs it times one IREE run of the build in a fresh process
(`npu-studio run`), one onnxruntime run of the model, and `trace` twice
(the first builds the one-function-per-dispatch module, the second finds it
cached), then `trace --method tensor-trace` (its traced build cached too).
Then `precision` on the same workspace, one demoted variant at a time
(build + trace). CPU seconds include child processes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from perf_doc import timed, write_section

from npu_studio.core.debug.numerics_trace import trace
from npu_studio.core.debug.precision import precision
from npu_studio.core.run.onnx_reference import run_onnxruntime
from npu_studio.core.run.runner import pick_function, random_inputs, run_vmfb
from npu_studio.core.workspace.workspace import compile_model
from tests.conftest import light_zoo_dir


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        ws = compile_model(light_zoo_dir() / "light_resnet50.onnx", Path(tmp) / "resnet50")
        sig = pick_function(ws.snapshot_path("input"))
        x = random_inputs(sig, 0)
        _, iree_w, iree_c = timed(lambda: run_vmfb(ws.vmfb_path, sig.name, x, parameters=ws.params_path))
        _, ort_w, ort_c = timed(lambda: run_onnxruntime(ws.source_path, x))
        first, first_w, first_c = timed(lambda: trace(ws, x))
        cached, cached_w, cached_c = timed(lambda: trace(ws, x))
        _, traced_first_w, _ = timed(lambda: trace(ws, x, method="tensor-trace"))
        traced, traced_w, traced_c = timed(lambda: trace(ws, x, method="tensor-trace"))
        variants = []
        for demotion in ("f16", "contractions-f16"):
            report, w, c = timed(lambda d=demotion: precision(ws, [d], x))
            variants.append((demotion, report.results[0], w, c))
    base_c = iree_c + ort_c
    lines = [
        "## Model debugging: trace and precision (issue 28)",
        "",
        ("`benchmarks/model_debugging.py`, light resnet50 (58 dispatches), seeded inputs, one run; CPU seconds "
         "include child processes."),
        "",
        "| measure | wall | CPU | **/ (IREE run + onnxruntime run), CPU** |",
        "|---|---:|---:|---:|",
        f"| one IREE run (fresh process) | {iree_w:.2f} s | {iree_c:.2f} s | |",
        f"| one onnxruntime run | {ort_w:.2f} s | {ort_c:.2f} s | |",
        f"| `trace`, dispatch module cached | {cached_w:.2f} s | {cached_c:.2f} s | **{cached_c / base_c:.1f}x** |",
        (f"| `trace`, first (builds the dispatch module: {first.build_seconds:.2f} s) | {first_w:.2f} s "
         f"| {first_c:.2f} s | {first_c / base_c:.1f}x |"),
        (f"| `trace --method tensor-trace`, traced build cached (first: {traced_first_w:.2f} s wall) "
         f"| {traced_w:.2f} s | {traced_c:.2f} s | {traced_c / base_c:.1f}x |"),
        "",
        (f"Inside the cached trace: onnxruntime with {len([d for d in cached.dispatches if d.paired])} intermediate "
         f"outputs {cached.onnxruntime_seconds:.2f} s, the dispatch-by-dispatch run {cached.iree_seconds:.2f} s; "
         f"the rest is reading the model, the dispatch index (dispatch-creation and flow) and the flow module. "
         f"Aim: at most 5x the two runs. Paired {cached.paired} of {len(cached.dispatches)} dispatches, "
         f"{'none departs' if cached.first_divergent is None else 'one departs'} "
         f"(tensor-trace: paired {traced.paired})."),
        "",
        "`precision`, one variant per run (the variant's compile, then its trace and the f32 build's run):",
        "",
        ("| demotion | wall | CPU | variant build | output vs f32 build (max abs) | worst dispatch (relative) "
         "| first departing dispatch |"),
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for demotion, r, w, c in variants:
        t = r.trace
        worst = max((d.max_rel_error for d in t.dispatches if d.paired), default=0.0) if t else float("nan")
        first = t.first_divergent if t else None
        lines.append(f"| {demotion} | {w:.2f} s | {c:.2f} s | {r.build_seconds:.2f} s "
                     f"| {r.vs_f32[0].max_abs_error:.3g} | {worst:.2g} "
                     f"| {f'#{first.index} {first.onnx_tensor}' if first else 'none'} |")
    lines += ["", ("The light zoo's resnet50 has constant weights, so its activations grow to about 1e14: "
                   "f16 overflows there (as it would on an NPU computing in f16).")]
    section = "\n".join(lines)
    print(section)
    if "--no-update" not in sys.argv:
        write_section("model-debugging-bench", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
