"""npu-studio executables WORKSPACE [--json]"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.executables.catalog import list_executables
from ..core.run.numeric_gate import verdict_short
from ..core.workspace.substitutions import load
from ..core.workspace.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser("executables", help="list the executables of a build, their dispatches and ONNX nodes",
                       description="List every hal.executable of the workspace's build with the name "
                                   "--iree-hal-substitute-executable-* matches, its dispatches, ONNX nodes, "
                                   "ops, dumped source and configuration, and its substitutions.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=run)


def substitution_label(s) -> str:
    state = "on" if s.applied else "draft" if s.file is None else "off"
    text = f"{s.kind} ({state})"
    if s.verdict:
        text += f" {verdict_short(s.verdict)}"
    if s.error:
        text += f" error: {s.error}"
    return text


def run(args) -> int:
    ws = Workspace.open(args.workspace)
    infos = list_executables(ws)
    subs = load(ws)
    if args.json:
        rows = []
        for info in infos:
            row = info.to_json()
            row["substitutions"] = [vars(s) for s in subs if s.name == info.name]
            rows.append(row)
        print(json.dumps({"workspace": str(ws.root), "executables": rows}, indent=2))
        return 0
    for info in infos:
        dispatches = ",".join(f"#{d}" for d in info.dispatches) or "-"
        print(f"{info.name}")
        print(f"  dispatches {dispatches}  ONNX: {', '.join(info.onnx_nodes) or '-'}  ops: {info.ops or '-'}")
        print(f"  source: {info.source}")
        if info.configuration:
            print(f"  configuration: {info.configuration}")
        if info.benchmark is None:
            print("  no standalone benchmark (cannot be timed on its own)")
        for s in subs:
            if s.name == info.name:
                print(f"  substituted: {substitution_label(s)}")
    return 0
