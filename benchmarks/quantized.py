"""Quantized (int8 QDQ) against f32 resnet50 on the default target: simulated
cycles, MAC-array cycles, DRAM bytes, SRAM peak, the NPU pipeline's wall time;
writes its section of docs/PERFORMANCE.md.

    python benchmarks/quantized.py

The int8 model is onnxruntime's static QDQ quantization of the light zoo's
resnet50 (per-channel int8 weights, int8 activations, four seeded random
calibration batches: tests/zoo_cache.quantize_qdq). Pipeline times are the
best of 3.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core" / "npu"))
sys.path.insert(0, str(HERE))

import onnx  # noqa: E402
from flowgen import flow_snapshot, zoo_model  # noqa: E402
from perf_doc import write_section  # noqa: E402

from npu_studio.core.npu import passes  # noqa: E402
from npu_studio.core.npu.sim import simulate  # noqa: E402
from npu_studio.core.npu.target import load_target  # noqa: E402
from tests.zoo_cache import quantize_qdq  # noqa: E402


def _measure(flow: Path, target) -> dict:
    best = None
    for _ in range(3):
        t = time.perf_counter()
        program = passes.run_npu_pipeline(flow, target)
        dt = time.perf_counter() - t
        best = dt if best is None or dt < best else best
    result = simulate(program)
    on_npu = sum(d.flops for d in program.dispatches if d.legal)
    return {
        "cycles": result.total_cycles,
        "mac": sum(d.mac_cycles for d in result.dispatches),
        "dram": sum(d.dram_read + d.dram_written for d in result.dispatches),
        "sram": result.sram_peak,
        "pipeline": best,
        "npu_share": on_npu / max(1, sum(d.flops for d in program.dispatches)),
        "dispatches": len(program.dispatches),
    }


def main() -> int:
    target = load_target()
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize_qdq(zoo_model("resnet50"), Path(tmp) / "resnet50_i8.onnx")
        q_flow = flow_snapshot(onnx.load(str(q)))
    rows = {"f32": _measure(flow_snapshot(zoo_model("resnet50")), target),
            "int8 QDQ": _measure(q_flow, target)}
    f, i = rows["f32"], rows["int8 QDQ"]
    lines = [
        "## Quantized against f32 resnet50 (issue 26)",
        "",
        "`benchmarks/quantized.py`, one run, default target (npu-mid: 32x32 MACs, i8 at 4 MACs per "
        "processing element per cycle, output stage on). The int8 model is onnxruntime's static QDQ "
        "quantization of the light zoo's resnet50 (per-channel int8 weights, int8 activations).",
        "",
        "| model | dispatches | FLOPs on the NPU | total cycles | MAC-array cycles | DRAM bytes | SRAM peak "
        "| NPU pipeline (s, best of 3) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['dispatches']} | {100 * r['npu_share']:.2f}% | {r['cycles']:,} | "
                     f"{r['mac']:,} | {r['dram']:,} | {r['sram']:,} | {r['pipeline']:.2f} |")
    lines += [
        "",
        f"int8 / f32: total cycles **{i['cycles'] / f['cycles']:.3f}**, MAC-array cycles "
        f"**{i['mac'] / f['mac']:.3f}**, DRAM bytes **{i['dram'] / f['dram']:.3f}**, pipeline time "
        f"{i['pipeline'] / f['pipeline']:.2f}x. IREE's QDQ form has {i['dispatches']} dispatches against "
        f"{f['dispatches']}: the i8 -> i32 zero-point sums and the standalone (de)quantize steps run on the "
        "vector unit; the requantization fused after each convolution runs in the output stage.",
    ]
    print("\n".join(lines))
    write_section("quantized-bench", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
