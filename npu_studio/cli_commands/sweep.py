"""npu-studio sweep SPEC [--jobs N] [--dask ADDRESS] [--out DIR] [--resume]

Runs a design-space sweep (docs/sweep.md): every point of the spec's
parameters on every model, the NPU pipeline and timing simulation each,
into OUT/results.parquet and OUT/results.csv; prints the Pareto fronts,
the knees, the best points and the monotonicity checks.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import StudioError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="design-space sweep of NPU targets over models: cycles, energy, area, Pareto fronts",
        description="Evaluate every design point of a sweep spec (sweep.toml) on its models, "
        "on this machine's cores or a Dask cluster, and write the results table.",
    )
    p.add_argument("spec", type=Path, metavar="SPEC")
    p.add_argument("--backend", default=None, metavar="NAME",
                   help="NPU backend of every point (`npu-studio backends`; default: the generic NPU)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="local worker processes (default: every core; 1 runs in this process)")
    p.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="run on the Dask scheduler at ADDRESS (tcp://host:8786) instead")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="results folder: new, empty, or one a sweep made (default: a new folder under "
                   "the studio's home, $NPU_STUDIO_HOME/sweeps)")
    p.add_argument("--resume", action="store_true",
                   help="keep the points already in DIR's cache (default DIR: this spec's latest results "
                   "under the studio's home); compute only the missing ones")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..core.sweep.executors import make_executor
    from ..core.sweep.report import summary
    from ..core.sweep.run import run_sweep
    from ..core.sweep.spec import load_spec

    if args.jobs is not None and args.jobs < 1:
        raise StudioError(None, f"--jobs: expected a positive number of workers, got {args.jobs}")
    if args.jobs is not None and args.dask is not None:
        raise StudioError(None, "--jobs and --dask exclude each other (Dask has its own workers)")
    from ..core.sweep.out_folder import claim, latest_default, new_default

    spec = load_spec(args.spec, args.backend)  # BackendError before any folder is claimed
    out = args.out
    if out is None:
        out = (latest_default(spec.path) if args.resume else None) or new_default(spec.path)
        print(f"results in {out}", file=sys.stderr)
    claim(out, spec.path)  # refused before any work: a folder of the user's, a file, not writable
    executor = make_executor(args.jobs, args.dask)
    shown = []

    def progress(done, total, eta):
        if not shown:
            shown.append(True)
            print(f"{total} evaluations on {executor.workers} worker(s)", file=sys.stderr)
        left = f", {eta:.0f} s left" if eta is not None else ""
        print(f"\r{done}/{total} done{left}  ", end="", file=sys.stderr, flush=True)

    try:
        result = run_sweep(spec, out, executor, resume=args.resume, on_progress=progress)
    finally:
        if shown:
            print(file=sys.stderr, flush=True)  # end the progress line
    sys.stdout.write(summary(result, [n for n, _ in spec.parameters]))
    return 0
