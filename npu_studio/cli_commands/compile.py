"""npu-studio compile MODEL [--target T] [--workspace DIR] [--json]"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.ir.context import mlir_context
from ..core.ir.op_count import BackgroundOpCounts, ops_by_dialect
from ..core.workspace.workspace import Workspace, compile_model
from .common import add_params_options, add_target_option, human_size, params_options, progress_printer


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="import and compile a model, keeping every phase",
                       description="Import an .onnx/.mlir/.mlirbc model and compile it with iree-compile, "
                                   "keeping a snapshot of the IR after every phase.")
    p.add_argument("model", type=Path, help=".onnx, .mlir or .mlirbc file")
    add_target_option(p)
    p.add_argument("--workspace", type=Path, help="workspace folder (default: under the user cache)")
    p.add_argument("--json", action="store_true", help="print the phase table as JSON")
    add_params_options(p)
    p.set_defaults(func=run)


def phase_rows(ws: Workspace, counted: dict | None = None) -> list[dict]:
    """The phase table; `counted` holds op counts made during the compile (BackgroundOpCounts)."""
    rows = []
    context = None  # one for every snapshot not counted yet: making it costs more than most parses
    for phase, path in ws.snapshots().items():
        rec = ws.manifest.phases[phase]
        counts = (counted or {}).get(phase)
        if counts is None:
            context = context or mlir_context()
            counts = ops_by_dialect(path, context)
        rows.append({
            "phase": phase,
            "seconds": rec.seconds,
            "size_bytes": rec.size_bytes,
            "ops": sum(counts.values()),
            "state": rec.state,
            "file": str(path),
        })
    return rows


def print_phase_table(ws: Workspace, rows: list[dict]) -> None:
    print(f"{'phase':<27}{'seconds':>9}{'size':>11}{'ops':>8}")
    for r in rows:
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.3f}"
        print(f"{r['phase']:<27}{secs:>9}{human_size(r['size_bytes']):>11}{r['ops']:>8}")
    m = ws.manifest
    if m.total_seconds is not None:
        print(f"{'total (iree-compile)':<27}{m.total_seconds:>9.3f}")
    print(f"workspace: {ws.root}")
    if ws.vmfb_path:
        print(f"vmfb: {ws.vmfb_path}")


def run(args) -> int:
    counting = BackgroundOpCounts()  # the phase table's op counts, made while the compiler runs
    try:
        ws = compile_model(args.model, args.workspace, target=args.target or "llvm-cpu",
                           on_progress=progress_printer(sys.stderr.isatty() and not args.json),
                           params=params_options(args), on_snapshot=counting.add)
    except BaseException:
        counting.stop()
        raise
    rows = phase_rows(ws, counting.counts())
    if args.json:
        print(json.dumps({"workspace": str(ws.root), "vmfb": str(ws.vmfb_path),
                          "total_seconds": ws.manifest.total_seconds, "phases": rows}, indent=2))
    else:
        print_phase_table(ws, rows)
    return 0
