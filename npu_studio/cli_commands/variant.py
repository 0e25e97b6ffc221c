"""npu-studio variant WORKSPACE {list | create NAME [--flags TEXT] [--compiler PATH] | build NAME | remove NAME}"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.workspace import variants
from ..core.workspace.workspace import Workspace
from .common import progress_printer


def add_parser(sub) -> None:
    p = sub.add_parser(
        "variant", help="named build variants of a workspace: other compiler flags or another iree-compile",
        description="List, create, build or remove a workspace's build variants. A variant adds compiler "
                    "flags (checked by the compiler before they are recorded) and/or another iree-compile to "
                    "the workspace's own options, and is built into variants/NAME/ as a transaction: a failed "
                    "build leaves the workspace as it was. `main` names the workspace's own build.")
    p.add_argument("workspace", type=Path, metavar="WORKSPACE")
    p.add_argument("action", choices=("list", "create", "build", "remove"))
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--flags", default="", metavar="TEXT",
                   help="extra iree-compile flags, quoted as in a shell (create); write --flags='--iree-opt-level=O3' with '=' since the value starts with a dash")
    p.add_argument("--compiler", metavar="PATH", help="another iree-compile binary (create)")
    p.add_argument("--json", action="store_true", help="print the variants as JSON (list)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.errors import StudioError

    if args.action != "list" and not args.name:
        raise StudioError(None, f"variant {args.action} needs a NAME")
    if args.action != "create" and (args.flags or args.compiler):
        raise StudioError(None, "--flags and --compiler go with `variant create`")
    ws = Workspace.open(args.workspace)
    if args.action == "create":
        v = variants.create(ws, args.name, args.flags, compiler=args.compiler)
        print(f"{v.name}: {' '.join(v.flags) or '(no extra flags)'}  [{v.compiler or 'installed iree-compile'}]")
    elif args.action == "build":
        v = variants.build(ws, args.name, on_progress=progress_printer(sys.stderr.isatty()))
        print(f"{v.name}: built in {v.build.total_seconds:.3f} s -> {v.vmfb_path}")
    elif args.action == "remove":
        variants.remove(ws, args.name)
        print(f"{args.name}: removed")
    else:
        rows = [{"name": v.name, "flags": v.flags, "compiler": v.compiler, "compiler_version": v.compiler_version,
                 "built": v.build is not None, "vmfb": str(v.vmfb_path) if v.vmfb_path else None,
                 "total_seconds": v.build.total_seconds if v.build else None} for v in variants.variants(ws)]
        if args.json:
            print(json.dumps(rows, indent=2))
        for r in rows if not args.json else ():
            state = f"built {r['total_seconds']:.3f} s" if r["built"] else "not built"
            print(f"{r['name']:<20} {state:<16} {' '.join(r['flags']) or '-'}"
                  + (f"  [{r['compiler']}]" if r["compiler"] else ""))
    return 0
