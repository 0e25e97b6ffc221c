"""npu-studio module WORKSPACE [--json] [--disassemble EXECUTABLE]"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "module", help="what the compiled .vmfb holds: functions, imports, executables, constants, sizes",
        description="Read the workspace's compiled module with iree-dump-module and its archive's member "
                    "list: exported functions with their signatures, required types and imports, every "
                    "embedded executable with its size and the dispatches it serves, constants and "
                    "parameters, the largest contributors to its size.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--json", action="store_true", help="print the contents as JSON")
    p.add_argument("--disassemble", metavar="EXECUTABLE",
                   help="print that executable's binary as assembly (objdump), each function headed by "
                        "the dispatches calling it")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.debug.module_contents import disassemble, inspect_module
    from ..core.workspace.workspace import Workspace

    ws = Workspace.open(args.workspace)
    if args.disassemble:
        sys.stdout.write(disassemble(ws, args.disassemble))
        return 0
    contents = inspect_module(ws)
    print(json.dumps(contents.to_dict(), indent=1) if args.json else "\n".join(contents.summary_lines()))
    return 0
