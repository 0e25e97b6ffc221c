"""npu-studio passes WORKSPACE PHASE [--changed-only] [--grep TEXT] [--show N [--ir]] [--first-containing TEXT]"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.debug.pass_trace import PassTraceJob, iter_passes
from ..core.errors import StudioError
from ..core.workspace.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser(
        "passes", help="the passes inside one phase, the IR after each and what each changed",
        description="Compile the phase before PHASE to PHASE with the IR printed before and after every "
                    "pass (cached in the workspace under passes/PHASE), then list the passes or show one.")
    p.add_argument("workspace", type=Path, metavar="WORKSPACE")
    p.add_argument("phase", choices=SNAPSHOT_PHASES, metavar="PHASE")
    p.add_argument("--changed-only", action="store_true", help="hide passes that changed nothing")
    p.add_argument("--grep", metavar="TEXT", help="only passes whose name, argument or op contains TEXT")
    p.add_argument("--show", type=int, metavar="N", help="print pass #N's diff against its input")
    p.add_argument("--ir", action="store_true", help="with --show: print the IR after the pass, not the diff")
    p.add_argument("--first-containing", metavar="TEXT",
                   help="name the first pass whose output contains TEXT and whose input did not")
    p.set_defaults(func=run)


def run(args) -> int:
    ws = Workspace.open(args.workspace)
    trace = PassTraceJob(ws, args.phase).run()
    if args.first_containing:
        found = trace.first_output_containing(args.first_containing, introduced=True)
        if found is None:
            print(f"no pass in {args.phase} introduces {args.first_containing!r}")
            return 1
        print(_row(found))
        return 0
    if args.show is not None:
        if not 0 <= args.show < len(trace.passes):
            raise StudioError(trace.path, f"no pass #{args.show}; {args.phase} ran {len(trace.passes)} passes")
        record = trace.passes[args.show]
        sys.stdout.write(trace.text(record) if args.ir else (trace.diff(record).unified() or
                                                              f"pass #{args.show} changed nothing\n"))
        return 0
    rows = list(iter_passes(trace, changed_only=args.changed_only, grep=args.grep))
    print(f"{'#':>4}  {'changed':7}  {'seconds':>8}  pass on op")
    for record in rows:
        print(_row(record))
    print(f"{len(rows)} of {len(trace.passes)} passes ({len(trace.changed())} changed the IR); "
          f"trace {trace.path} ({trace.seconds:.2f} s)")
    return 0


def _row(p) -> str:
    return (f"{p.index:>4}  {'yes' if p.changed else '':7}  {p.seconds:8.3f}  "
            f"{'  ' * p.depth}{p.name} on {p.op}")
