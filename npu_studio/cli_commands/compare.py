"""npu-studio compare WORKSPACE BUILD_A BUILD_B [--json] [--profile] [--bisect-flags] ..."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.units import format_bytes
from ..core.workspace.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare", help="two builds of a workspace side by side (main and build variants), or bisect their flags",
        description="Compare two builds (`main` or a variant's name, see `npu-studio variant`): compile time per "
                    "phase, the passes whose time changed most (when both have a compile profile; --profile "
                    "records missing ones), dispatch and executable counts, module and executable sizes, the first "
                    "phase whose IR differs with its diff (locations ignored), and the outputs of both modules on "
                    "the same inputs. With --bisect-flags: the smallest set of the flags they differ in that still "
                    "makes the difference (delta debugging; each trial is a compile that is not kept).")
    p.add_argument("workspace", type=Path, metavar="WORKSPACE")
    p.add_argument("a", metavar="BUILD_A")
    p.add_argument("b", metavar="BUILD_B")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--profile", action="store_true", help="record the compile profile of a build that lacks one")
    p.add_argument("--input", type=Path, action="append", default=[], metavar="X.npy", help="an input (repeat)")
    p.add_argument("--tolerance", type=float, default=0.0, metavar="T",
                   help="outputs differing by at most T count as the same (default 0: bit for bit)")
    p.add_argument("--no-run", action="store_true", help="do not run the modules")
    p.add_argument("--bisect-flags", action="store_true", help="find the flags that make the difference")
    p.add_argument("--seconds", type=float, metavar="S",
                   help="with --bisect-flags: a compile time differing by more than S seconds also counts")
    p.add_argument("-U", "--context", type=int, default=3, metavar="LINES")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.errors import StudioError

    if args.tolerance < 0:
        raise StudioError(None, f"--tolerance must not be negative, got {args.tolerance:g}")
    ws = Workspace.open(args.workspace)
    if args.bisect_flags:
        return _bisect(ws, args)
    from ..core.debug.build_compare import TOP_PASS_CHANGES, compare

    if args.profile:
        from ..core.debug.compile_profile import ProfileJob, load_profile

        for name in (args.a, args.b):
            if load_profile(ws, name) is None:
                ProfileJob(ws, name).run()
    r = compare(ws, args.a, args.b, input_files=args.input or None, tolerance=args.tolerance,
                run_outputs=not args.no_run, context=args.context)
    if args.json:
        print(json.dumps(r.to_json(), indent=2, default=str))
        return 0
    w = sys.stdout.write
    w(f"{'':<27}{args.a:>14}{args.b:>14}\n")
    for d in r.phases:
        w(f"{d.phase:<27}{_s(d.a_seconds):>14}{_s(d.b_seconds):>14}\n")
    w(f"{'compile total':<27}{_s(r.total_seconds[0]):>14}{_s(r.total_seconds[1]):>14}\n")
    w(f"{'dispatches':<27}{r.dispatches[0]:>14}{r.dispatches[1]:>14}\n")
    w(f"{'executables':<27}{r.executables[0]:>14}{r.executables[1]:>14}\n")
    w(f"{'module (vmfb)':<27}{format_bytes(r.vmfb_bytes[0]):>14}{format_bytes(r.vmfb_bytes[1]):>14}\n")
    eb = [format_bytes(x) if x is not None else "-" for x in r.executable_bytes]
    w(f"{'executable objects':<27}{eb[0]:>14}{eb[1]:>14}\n")
    if r.passes:
        w(f"\npasses whose time changed most ({args.a} -> {args.b}):\n")
        for p in r.passes[:TOP_PASS_CHANGES]:
            ratio = f"x{p.ratio:.2f}" if p.ratio is not None else "new"
            w(f"  {p.change:+9.4f} s {ratio:>7}  {p.phase}: {p.name}\n")
    for note in r.notes:
        w(f"note: {note}\n")
    if r.outputs:
        same = "bit-identical" if r.same_outputs else "differ"
        worst = max(o.max_abs for o in r.outputs)
        w(f"\noutputs of @{r.function} on {r.inputs}: {same} (max abs difference {worst:g})\n")
    if r.first_difference is None:
        w("\nIR: no difference in any phase (locations ignored)\n")
    else:
        removed, added = r.diff_counts
        w(f"\nIR: first difference in phase {r.first_difference} (-{removed} +{added} lines)\n")
        w(r.diff)
    if r.no_difference:
        w("no difference\n")
    return 0


def _bisect(ws, args) -> int:
    from ..core.debug.flag_bisect import BisectJob

    def show(trial):
        if sys.stderr.isatty():
            print(f"  {'differs' if trial.differs else 'same   '} {' '.join(trial.changes)}", file=sys.stderr)

    result = BisectJob(ws, args.a, args.b, tolerance=args.tolerance, seconds=args.seconds, on_trial=show).run()
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(f"{len(result.changes)} flag changes from {args.a} to {args.b}; {len(result.trials)} trial builds")
    print(f"the difference ({result.criterion}) comes from: {' '.join(result.culprit)}")
    return 0


def _s(x) -> str:
    return f"{x:.3f} s" if x is not None else "-"
