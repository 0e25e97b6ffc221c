"""npu-studio diff WORKSPACE PHASE_A [PHASE_B] [--original | --previous-build] [--dispatch N]"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.compile.phases import PHASES
from ..core.debug.phase_diff import workspace_diff
from ..core.ir.diff import DiffOptions
from ..core.textio import check_output_file, write_output
from ..core.workspace.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diff", help="unified diff of two phases, an edit against the compiler, or two builds",
        description="Print a unified diff. PHASE_A PHASE_B: the two snapshots. PHASE_A alone: what that "
                    "phase changed (the phase before it against it); with --original: the compiler's output "
                    "against the edited text; with --previous-build: before the last resume against now. "
                    "Locations and huge constants are left out of the comparison unless asked.")
    p.add_argument("workspace", type=Path, metavar="WORKSPACE")
    p.add_argument("phase_a", choices=PHASES, metavar="PHASE_A")
    p.add_argument("phase_b", nargs="?", choices=PHASES, metavar="PHASE_B")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--original", action="store_true", help="PHASE_A's compiler output against its edit")
    which.add_argument("--previous-build", action="store_true", help="PHASE_A before the last resume against now")
    p.add_argument("--dispatch", type=int, metavar="N", help="only dispatch #N's executable (as numbered in "
                                                             "`npu-studio dispatches`)")
    p.add_argument("--locations", action="store_true", help="compare loc(...) too")
    p.add_argument("--constants", action="store_true", help="compare huge constants in full")
    p.add_argument("--patch", action="store_true",
                   help="print the original lines, as a patch that applies to the first text")
    p.add_argument("-U", "--context", type=int, default=3, metavar="LINES")
    p.add_argument("-o", "--output", type=Path, help="write the diff to this file")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.errors import StudioError

    if args.phase_b is not None and (args.original or args.previous_build):
        raise StudioError(None, "--original and --previous-build take one phase")
    if args.output is not None:
        check_output_file(args.output)  # a folder or a missing folder: one line, before any work
    ws = Workspace.open(args.workspace)
    diff = workspace_diff(ws, args.phase_a, args.phase_b, original=args.original,
                          previous_build=args.previous_build, dispatch=args.dispatch,
                          options=DiffOptions(locations=args.locations, constants=args.constants))
    text = diff.patch_text(args.context) if args.patch else diff.unified(args.context)
    if args.output is not None:
        write_output(args.output, text)
        removed, added = diff.counts()
        print(f"{args.output}: -{removed} +{added} lines", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
