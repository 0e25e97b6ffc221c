"""npu-studio extract WORKSPACE N --out DIR [--input x.npy ...] [--seed N] [--json]"""

from __future__ import annotations

import json
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "extract", help="write one dispatch as a standalone reproducer that needs only IREE's tools",
        description="Run the build as the trace does, capture dispatch N's operands and results, and write "
                    "DIR: the dispatch's flow module (dispatch.mlir), its executable source and benchmark "
                    "(sources/, benchmarks/), the inputs and IREE's outputs (.npy), the ONNX reference where "
                    "the dispatch is paired, the exact flags (flags.txt) and run.sh, which compiles and runs "
                    "the dispatch with iree-compile and iree-run-module from PATH and exits 0 when it "
                    "computes exactly the stored IREE result, 1 otherwise.")
    p.add_argument("workspace", type=Path)
    p.add_argument("index", type=int, metavar="N", help="the dispatch's number (#N in `trace`, `dispatches`)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="a new (or empty) folder to write the reproducer into")
    p.add_argument("--input", action="append", type=Path, default=[],
                   help="model input .npy file, once per argument (default: the trace's seeded random inputs)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (the trace's default: 0)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.debug.extract import extract
    from ..core.run.runner import load_inputs, pick_function
    from ..core.workspace.workspace import Workspace

    ws = Workspace.open(args.workspace)
    inputs = load_inputs(pick_function(ws.snapshot_path("input")), args.input, ws.root) if args.input else None
    repro = extract(ws, args.index, args.out, inputs, seed=args.seed)
    print(json.dumps(repro.to_dict(), indent=1) if args.json else "\n".join(repro.summary_lines()))
    return 0
