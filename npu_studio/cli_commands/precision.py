"""npu-studio precision WORKSPACE --demote f16|bf16|contractions-f16|i64-to-i32|f64-to-f32 ... [--input x.npy ...]"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.errors import StudioError


def add_parser(sub) -> None:
    from ..core.debug.precision import DEMOTIONS

    p = sub.add_parser(
        "precision", help="build the model with IREE's demotion flags and trace each build against ONNX",
        description="One build variant per demotion (demote-KIND, kept in the workspace), run whole by IREE "
                    "and compared with the workspace's own build, and traced dispatch by dispatch against "
                    "onnxruntime: does the model run in f16 or bf16, and which layer departs first. "
                    + "; ".join(f"{k}: {' '.join(v)}" for k, v in DEMOTIONS.items())
                    + ". Exit code 0 when every demoted build agrees, 1 when one departs, 3 when none departs "
                      "but IREE could not build or run one (IREE's first error line, the flags and the crash "
                      "reproducer are printed) or it could not be traced.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--demote", action="append", default=[], choices=list(DEMOTIONS), required=True,
                   help="a demotion to try (repeat for several)")
    p.add_argument("--flag", action="append", default=[], metavar="FLAG",
                   help="another compiler flag for every demoted build (repeat; checked by the compiler)")
    p.add_argument("--input", action="append", type=Path, default=[], help=".npy file, once per argument")
    p.add_argument("--tolerance", type=float, metavar="T",
                   help="relative to each reference's largest value (default by element type: 1e-2 for f16)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--npu", action="store_true",
                   help="also plan each build on the NPU (default target) and simulate it: coverage and cycles "
                        "against the f32 build")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def npu_plan(flow: Path) -> dict:
    """The NPU pipeline and the timing simulation on one build's flow snapshot."""
    from ..core.npu.plan.passes import run_npu_pipeline
    from ..core.npu.sim import simulate

    program = run_npu_pipeline(flow)
    result = simulate(program, program.target)
    return {"dispatches": len(program.dispatches), "on_npu": sum(1 for d in program.dispatches if d.legal),
            "cycles": result.total_cycles}


def run(args) -> int:
    from ..core.debug.numerics_trace import check_traceable
    from ..core.debug.precision import precision
    from ..core.debug.precision_report import DEPARTS, OK
    from ..core.run.runner import load_inputs, pick_function
    from ..core.workspace.workspace import Workspace

    if args.tolerance is not None and not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise StudioError(None, f"--tolerance must be a finite number >= 0, got {args.tolerance:g}")
    ws = Workspace.open(args.workspace)
    check_traceable(ws)
    inputs = load_inputs(pick_function(ws.snapshot_path("input")), args.input, ws.root) if args.input else None
    report = precision(ws, args.demote, inputs, extra_flags=args.flag, tolerance=args.tolerance, seed=args.seed)
    data = report.to_dict()
    lines = report.summary_lines()
    if args.npu:
        from ..core.workspace import variants

        plans = {"f32": npu_plan(ws.snapshot_path("flow"))}
        for r in report.results:
            if r.failure is not None and r.failure.stage == "build":
                continue
            plans[r.demotion] = npu_plan(variants.resolve(ws, r.variant).snapshot_path("flow"))
        data["npu"] = plans
        base = plans["f32"]["cycles"]
        lines.insert(-1, "  on the NPU (default target): " + "; ".join(
            f"{k}: {v['on_npu']}/{v['dispatches']} dispatches, {v['cycles']:,} cycles"
            + (f" ({v['cycles'] / base:.2f}x f32)" if k != "f32" and base else "") for k, v in plans.items()))
    print(json.dumps(data, indent=1) if args.json else "\n".join(lines))
    return {OK: 0, DEPARTS: 1}.get(report.verdict, 3)
