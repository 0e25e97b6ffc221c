"""npu-studio dispatches MODEL_OR_WORKSPACE [--phase flow] [--json]"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.dispatch_report import format_dispatches, to_json
from ..core.ir_index import index_file
from ..core.mlir_text import SnapshotParseError
from ..core.phases import SNAPSHOT_PHASES


def add_parser(sub) -> None:
    p = sub.add_parser(
        "dispatches",
        help="list the dispatches of a compile with their ops and ONNX nodes",
        description="Index the dispatches of one phase snapshot of a workspace "
        "(or of a model, compiled first).",
    )
    p.add_argument("target", type=Path, metavar="MODEL_OR_WORKSPACE")
    p.add_argument("--phase", default="flow", choices=SNAPSHOT_PHASES)
    p.add_argument("--json", action="store_true", help="print the index as JSON")
    p.set_defaults(func=run)


def snapshot_path(workspace: Path, phase: str) -> Path:
    """WORKSPACE/phases/NN.<phase>.mlir, NN = 01 (input) .. 12 (vm)."""
    nn = SNAPSHOT_PHASES.index(phase) + 1
    return workspace / "phases" / f"{nn:02d}.{phase}.mlir"


def run(args) -> int:
    target: Path = args.target
    if target.is_dir():
        workspace = target
    else:
        from ..core.workspace import compile_model

        workspace = compile_model(target).root
    path = snapshot_path(workspace, args.phase)
    if not path.exists():
        print(f"npu-studio: error: no {args.phase} snapshot at {path}", file=sys.stderr)
        return 2
    try:
        index = index_file(path, args.phase)
    except SnapshotParseError as e:
        print(f"{e.path}:{e.line}:{e.col}: {e.message}", file=sys.stderr)
        return 2
    print(to_json(index) if args.json else format_dispatches(index), end="" if not args.json else "\n")
    return 0
