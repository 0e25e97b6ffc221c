"""Quantized (int8 QDQ) against f32 resnet50 on the default target: simulated
cycles, MAC-array cycles, DRAM bytes, SRAM peak, the NPU pipeline's wall and
CPU time; and what the exact functional check (`simulate --check`, float sums
in IREE's CPU order) costs against numpy's order on the int8 models. Writes
its section of docs/PERFORMANCE.md.

    python benchmarks/quantized.py

The int8 model is onnxruntime's static QDQ quantization of the light zoo's
resnet50 (per-channel int8 weights, int8 activations, four seeded random
calibration batches: tests/zoo_cache.quantize_qdq). Pipeline times are the
best of 3.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu"))
sys.path.insert(0, str(HERE))

import onnx  # noqa: E402
from flowgen import flow_snapshot, zoo_model  # noqa: E402
from perf_doc import timed, write_section  # noqa: E402

from npu_studio.core.npu.plan import passes  # noqa: E402
from npu_studio.core.npu.sim import simulate  # noqa: E402
from npu_studio.core.npu.target.target import load_target  # noqa: E402
from tests.zoo_cache import quantize_qdq  # noqa: E402


def _measure(flow: Path, target) -> dict:
    best = best_cpu = None
    for _ in range(3):
        program, dt, cpu = timed(lambda: passes.run_npu_pipeline(flow, target))
        best = dt if best is None or dt < best else best
        best_cpu = cpu if best_cpu is None or cpu < best_cpu else best_cpu
    result = simulate(program)
    on_npu = sum(d.flops for d in program.dispatches if d.legal)
    return {
        "cycles": result.total_cycles,
        "mac": sum(d.mac_cycles for d in result.dispatches),
        "dram": sum(d.dram_read + d.dram_written for d in result.dispatches),
        "sram": result.sram_peak,
        "pipeline": best,
        "pipeline_cpu": best_cpu,
        "npu_share": on_npu / max(1, sum(d.flops for d in program.dispatches)),
        "dispatches": len(program.dispatches),
    }


def _check_costs(name: str, target, tmp: Path) -> dict:
    """Wall and CPU seconds of the functional check of int8 `name`, in IREE's order and in numpy's."""
    from npu_studio.core.npu.numerics.check import check
    from npu_studio.core.workspace.workspace import compile_model

    ws = compile_model(quantize_qdq(zoo_model(name), tmp / f"{name}_i8.onnx"), tmp / f"ws-{name}")
    program = passes.run_npu_pipeline(ws.snapshot_path("flow"), target)
    check(ws, program, onnxruntime=False, iree_build=False, iree_order=False)  # builds the dispatch module once
    out = {}
    for label, order in (("iree", True), ("numpy", False)):
        report, wall, cpu = timed(lambda: check(ws, program, onnxruntime=False, iree_build=False, iree_order=order))
        out[label] = (report.sim_seconds, wall, cpu, report.vs_iree, max(d.max_error or 0.0 for d in report.dispatches
                                                                        if d.dtype in ("int8", "uint8")))
    return out


def main() -> int:
    target = load_target()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize_qdq(zoo_model("resnet50"), Path(tmp) / "resnet50_i8.onnx")
        q_flow = flow_snapshot(onnx.load(str(q)))
        checks = {name: _check_costs(name, target, Path(tmp)) for name in ("resnet50", "inception_v1")}
    rows = {"f32": _measure(flow_snapshot(zoo_model("resnet50")), target),
            "int8 QDQ": _measure(q_flow, target)}
    f, i = rows["f32"], rows["int8 QDQ"]
    lines = [
        "## Quantized against f32 resnet50 (issue 26)",
        "",
        "`benchmarks/quantized.py`, one run, default target (npu-mid: 32x32 MACs, i8 at 4 MACs per "
        "processing element per cycle, output stage on). The int8 model is onnxruntime's static QDQ "
        f"quantization of the light zoo's resnet50 (per-channel int8 weights, int8 activations). Load "
        f"average at the start: {load:.1f} on 2 cores.",
        "",
        "| model | dispatches | FLOPs on the NPU | total cycles | MAC-array cycles | DRAM bytes | SRAM peak "
        "| NPU pipeline wall (s, best of 3) | NPU pipeline CPU (s, best of 3) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['dispatches']} | {100 * r['npu_share']:.2f}% | {r['cycles']:,} | "
                     f"{r['mac']:,} | {r['dram']:,} | {r['sram']:,} | {r['pipeline']:.2f} | "
                     f"{r['pipeline_cpu']:.2f} |")
    lines += [
        "",
        f"int8 / f32: total cycles **{i['cycles'] / f['cycles']:.3f}**, MAC-array cycles "
        f"**{i['mac'] / f['mac']:.3f}**, DRAM bytes **{i['dram'] / f['dram']:.3f}**, pipeline time "
        f"{i['pipeline'] / f['pipeline']:.2f}x. IREE's QDQ form has {i['dispatches']} dispatches against "
        f"{f['dispatches']}: the i8 -> i32 zero-point sums and the standalone (de)quantize steps run on the "
        "vector unit; the requantization fused after each convolution runs in the output stage.",
        "",
        "The functional check of the int8 models (`simulate --check`, no whole-model IREE run or "
        "onnxruntime): float sums in the order of IREE's CPU build (exact, the default for quantized "
        "models) against numpy's order. Worst int8 dispatch error against IREE on the same inputs, in steps.",
        "",
        "| int8 model | order | simulation (s) | check wall (s) | check CPU (s) | worst int8 dispatch |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in checks.items():
        for label, (sim, wall, cpu, _, worst) in c.items():
            lines.append(f"| {name} | {label} | {sim:.1f} | {wall:.1f} | {cpu:.1f} | {worst:g} |")
    lines += [
        "",
        "IREE's order costs " + ", ".join(
            f"{c['iree'][2] / c['numpy'][2]:.2f}x CPU on {n}" for n, c in checks.items())
        + ": the f32 convolutions of a QDQ model (inception_v1 keeps 32 convolutions and matrix products in float) are summed one "
        "reduction point at a time instead of by einsum.",
    ]
    print("\n".join(lines))
    write_section("quantized-bench", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
