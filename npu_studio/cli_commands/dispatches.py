"""npu-studio dispatches MODEL_OR_WORKSPACE [--phase flow] [--json]"""

from __future__ import annotations

from pathlib import Path

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.errors import StudioError
from ..core.ir.dispatch_index import index_file
from ..core.ir.dispatch_report import format_dispatches, to_json
from ..core.workspace.workspace import open_or_compile


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


def run(args) -> int:
    ws = open_or_compile(args.target)
    path = ws.snapshot_path(args.phase)
    if not path.exists():
        raise StudioError(ws.root, f"no {args.phase} snapshot; compile first")
    index = index_file(path, args.phase)  # SnapshotParseError names file:line:col
    print(to_json(index) if args.json else format_dispatches(index), end="" if not args.json else "\n")
    return 0
