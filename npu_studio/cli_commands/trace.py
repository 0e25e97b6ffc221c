"""npu-studio trace WORKSPACE [--input x.npy ...] [--tolerance T] [--seed N] [--function NAME] [--method M] [--break N] [--json]"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.errors import StudioError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "trace", help="compare every dispatch of the build with the ONNX model; name the first that departs",
        description="Run onnxruntime with the intermediate tensors exposed and the build dispatch by "
                    "dispatch; pair each dispatch's result with the ONNX tensor it provably holds (moved into its "
                    "layout) and report its error; name the first dispatch that departs while its inputs agree, "
                    "or say why none can be named. Exit code 1 when a dispatch is named or the outputs depart.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--input", action="append", type=Path, default=[], help=".npy file, once per argument")
    p.add_argument("--tolerance", type=float, metavar="T",
                   help="a result departs when max |IREE - ONNX| > T * max(1, largest |ONNX|) "
                        "(default: from the element types the dispatch and its inputs compute in: "
                        "1e-4 for f32, 1e-2 for f16, 5e-2 for bf16; see docs/model-debugging.md)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--function", help="entry point (default: the first public one)")
    p.add_argument("--method", choices=("dispatches", "tensor-trace"), default="dispatches",
                   help="how IREE's side is run: dispatch by dispatch from the flow snapshot (default; sees flow "
                        "edits), or the build compiled again from dispatch-creation with "
                        "--iree-flow-trace-dispatch-tensors (what the whole module computes)")
    p.add_argument("--break", dest="break_after", type=int, metavar="N",
                   help="instead: build the variant break-N with IREE's own --iree-flow-break-dispatch after "
                        "dispatch #N (from the imported model), run it, and show that dispatch's output (shape, "
                        "statistics, histogram, first elements differing from onnxruntime)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.debug.numerics_trace import check_traceable, trace
    from ..core.run.runner import load_inputs, pick_function
    from ..core.workspace.workspace import Workspace

    if args.tolerance is not None and not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise StudioError(None, f"--tolerance must be a finite number >= 0, got {args.tolerance:g}")
    ws = Workspace.open(args.workspace)
    check_traceable(ws)
    inputs = None
    if args.input:
        inputs = load_inputs(pick_function(ws.snapshot_path("input"), args.function), args.input, ws.root)
    if args.break_after is not None:
        from ..core.debug.dispatch_break import break_after

        if args.function or args.method != "dispatches":
            raise StudioError(None, "--break takes no --function or --method (it breaks the first entry point)")
        result = break_after(ws, args.break_after, inputs, tolerance=args.tolerance, seed=args.seed)
        print(json.dumps(result.to_dict(), indent=1) if args.json else "\n".join(result.summary_lines()))
        return 1 if result.dispatch.departs else 0
    report = trace(ws, inputs, tolerance=args.tolerance, seed=args.seed, function=args.function,
                   method=args.method)
    print(json.dumps(report.to_dict(), indent=1) if args.json else "\n".join(report.summary_lines()))
    if not args.json and report.first_divergent is not None:
        from ..core.debug.extract import command_line

        first = report.first_divergent.index
        print(f"reproducer of #{first}: {command_line(ws.root, first, seed=args.seed, inputs=args.input)}")
    return report.exit_code
