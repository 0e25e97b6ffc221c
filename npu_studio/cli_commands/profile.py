"""npu-studio profile WORKSPACE [--build NAME] [--phase P] [--top N] [--json] [--refresh]
   npu-studio profile WORKSPACE --executables [--timeout S] [--jobs N] [--json]"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.workspace.workspace import Workspace
from .common import progress_printer


def add_parser(sub) -> None:
    p = sub.add_parser(
        "profile", help="where the compiler spends its time: passes by phase, or each executable's compile",
        description="Per-pass compile times of a build: each phase is compiled again on its own with "
                    "--mlir-timing (single-threaded, so pass times add up to the phase) and the result is kept "
                    "in the workspace (profiles/BUILD.json) until the build changes. With --executables: "
                    "compile each dumped executable source alone (--compile-mode=hal-executable) under a "
                    "timeout, the slowest first.")
    p.add_argument("workspace", type=Path, metavar="WORKSPACE")
    p.add_argument("--build", default="main", metavar="NAME", help="a build variant's name (default: main)")
    p.add_argument("--phase", choices=SNAPSHOT_PHASES, metavar="P", help="only this phase's passes")
    p.add_argument("--top", type=int, default=10, metavar="N", help="passes shown per phase (default 10)")
    p.add_argument("--refresh", action="store_true", help="record the profile again even if one is kept")
    p.add_argument("--executables", action="store_true", help="compile time of each executable instead")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds allowed per executable (--executables; default 120)")
    p.add_argument("--jobs", type=int, default=2, metavar="N", help="executables compiled at once (default 2)")
    p.add_argument("--tracy", action="store_true",
                   help="run the build's module under the Tracy-instrumented runtime and keep the capture "
                        "(profiles/BUILD.tracy); says in one line what the installed tools cannot do")
    p.add_argument("--input", type=Path, action="append", default=[], metavar="X.npy",
                   help="an input for --tracy (repeat; default: seeded random inputs)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.errors import StudioError

    if args.top < 1:
        raise StudioError(None, f"--top must be at least 1, got {args.top}")
    ws = Workspace.open(args.workspace)
    if args.executables:
        return _executables(ws, args)
    if args.tracy:
        return _tracy(ws, args)
    from ..core.debug.compile_profile import ProfileJob, load_profile

    prof = None if args.refresh else load_profile(ws, args.build)
    if prof is None:
        prof = ProfileJob(ws, args.build, on_progress=progress_printer(sys.stderr.isatty())).run()
    phases = [args.phase] if args.phase else list(prof.phases)
    if args.json:
        out = {"build": prof.build, "phases": {
            ph: {"total_wall": pp.total_wall, "total_user": pp.total_user, "pass_wall": round(pp.pass_wall, 6),
                 "outside_wall": pp.outside_wall,
                 "passes": [{"name": p.name, "wall": p.wall, "user": p.user, "instances": p.instances,
                             "share": round(pp.share(p), 4)} for p in pp.top(args.top)]}
            for ph in phases if (pp := prof.phases.get(ph))}}
        print(json.dumps(out, indent=2))
        return 0
    if args.phase is None:
        print(f"{'phase':<27}{'total s':>9}{'in passes':>11}  top pass")
        for ph in phases:
            pp = prof.phases[ph]
            top = pp.passes[0] if pp.passes else None
            name = f"{top.name} ({pp.share(top):.0%})" if top else "-"
            print(f"{ph:<27}{pp.total_wall:>9.3f}{pp.pass_wall:>11.3f}  {name}")
        print(f"{'total':<27}{sum(p.total_wall for p in prof.phases.values()):>9.3f}")
        return 0
    pp = prof.phases.get(args.phase)
    if pp is None:
        raise StudioError(ws.root, f"build {args.build!r} has no {args.phase} phase to profile")
    print(f"{args.phase}: {pp.total_wall:.3f} s ({pp.pass_wall:.3f} s in passes, {pp.outside_wall:.3f} s outside)")
    print(f"{'wall s':>9}{'user s':>9}{'share':>7}{'runs':>6}  pass")
    for p in pp.top(args.top):
        print(f"{p.wall:>9.4f}{p.user:>9.4f}{pp.share(p):>7.1%}{p.instances:>6}  {p.name}")
    return 0


def _executables(ws, args) -> int:
    from ..core.debug.executable_times import ExecutableTimesJob

    job = ExecutableTimesJob(ws, args.build, timeout=args.timeout, jobs=args.jobs)
    result = job.run()
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(f"{'seconds':>9}  {'status':<9} executable  (dispatches; ONNX nodes)")
    for t in result.times:
        where = f"{', '.join(t.dispatches) or '-'}; {', '.join(t.nodes[:3]) or '-'}{' ...' if len(t.nodes) > 3 else ''}"
        secs = f"{t.seconds:9.3f}" if t.seconds is not None else f"{'-':>9}"
        print(f"{secs}  {t.status:<9} {t.name}  ({where})" + (f": {t.reason}" if t.reason else ""))
    print(f"{len(result.times)} executables in {result.wall_seconds:.2f} s on {result.jobs} jobs")
    return 0


def _tracy(ws, args) -> int:
    from ..core.debug.tracy_capture import capture_run, missing_compiler_tracing
    from ..core.run.numeric_gate import load_inputs
    from ..core.run.runner import pick_function, random_inputs

    sig = pick_function(ws.snapshot_path("input"))
    inputs = load_inputs(args.input, sig) if args.input else random_inputs(sig)
    cap = capture_run(ws, args.build, sig.name, inputs)
    notes = [n for n in (cap.summary_note, missing_compiler_tracing()) if n]
    if args.json:
        print(json.dumps({"trace": str(cap.path), "zones": cap.zones, "span_ms": cap.span_ms,
                          "bytes": cap.size_bytes, "notes": notes}, indent=2))
        return 0
    print(f"{cap.path}: {cap.zones} zones over {cap.span_ms} ms of @{sig.name} ({cap.size_bytes} bytes)")
    for note in notes:
        print(note)
    return 0
