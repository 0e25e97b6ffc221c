"""npu-studio measure WORKSPACE [--target FILE] [--sort COLUMN] [--csv OUT] [--trace OUT] [--json OUT] [--seed N] [--standalone]
       npu-studio measure WORKSPACE --measured FILE [--target FILE] [--csv OUT]

Measured against simulated: runs the workspace's CPU build once under
IREE's runtime profiler and prints, per dispatch, the measured CPU time
beside the simulated NPU time of the same dispatch at the target clock
(and their ratio: how much the NPU would gain), largest ratio first.
With --standalone, iree-benchmark-module also times whole runs of the CPU
build and of the NPU variant with the plugin's C interpreter. With
--measured, the measured cycles come from a file (any runner's, or the
chip's) and are shown beside the simulated cycles per dispatch and per task.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import StudioError


def add_parser(sub) -> None:
    p = sub.add_parser("measure", help="measured CPU time per dispatch beside the simulated NPU time",
                       description="Profile one run of the workspace's CPU build with IREE's runtime profiler "
                                   "and compare each dispatch's measured time with its simulated NPU time.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--target", dest="npu_target", metavar="FILE",
                   help="NPU target TOML to run the NPU pipeline with first (default: the workspace's NPU "
                        "program, else the bundled default target)")
    p.add_argument("--sort", default="ratio", metavar="COLUMN",
                   help="dispatch, symbol, unit, measured_cpu_us, simulated_npu_us or ratio (default)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--csv", type=Path, metavar="OUT", help="write the table as CSV")
    p.add_argument("--json", type=Path, metavar="OUT", help="write the table as JSON")
    p.add_argument("--trace", type=Path, metavar="OUT",
                   help="write the simulated NPU schedule and the measured CPU run as one Perfetto trace")
    p.add_argument("--standalone", action="store_true",
                   help="also time whole runs with iree-benchmark-module: the CPU build, and the NPU variant with "
                        "the plugin's C interpreter (standalone mode)")
    p.add_argument("--measured", type=Path, metavar="FILE",
                   help="measured cycles from a file instead of a profiled CPU run (CSV: a `dispatch` or `task` "
                        "column and a `cycles` column; the CSV of `simulate --csv` as it is): shown beside the "
                        "simulated cycles per dispatch and per task")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.measured is not None:
        return _from_file(args)
    from ..core.npu.hal.measured import (COLUMNS, format_table, measured_table, profile_dispatches, rows_to_json,
                                         sort_rows, write_csv, write_trace)
    from ..core.npu.program.npu_ir import NpuProgram
    from ..core.npu.program.npu_ir import NpuError
    from ..core.npu.sim import simulate
    from ..core.npu.store.workspace_io import json_path, run_for_workspace
    from ..core.run.runner import pick_function, random_inputs
    from ..core.textio import check_output_file, write_output
    from ..core.workspace.workspace import Workspace

    if args.sort not in COLUMNS:
        raise StudioError(None, f"--sort {args.sort}: expected one of {', '.join(COLUMNS)}")
    for out in (args.csv, args.json, args.trace):
        if out:
            check_output_file(out)
    ws = Workspace.open(args.workspace)
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no vmfb; compile first")
    try:
        if args.npu_target or not json_path(ws).is_file():
            program = run_for_workspace(ws, args.npu_target)
        else:
            program = NpuProgram.load(json_path(ws))
    except NpuError as e:
        raise StudioError(ws.root, str(e).replace("\n", "; ")) from None
    sim = simulate(program)
    sig = pick_function(ws.snapshot_path("input"))
    inputs = random_inputs(sig, args.seed, ws.user_model_path)
    events = profile_dispatches(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)
    rows = measured_table(program, sim, events)
    print(f"@{sig.name}: IREE CPU build measured (local-task) against NPU {sim.target} simulated at "
          f"{sim.clock_mhz} MHz")
    print("\n".join(format_table(sort_rows(rows, args.sort))))
    if args.standalone:
        print(_whole_runs(ws, sig.name, inputs))
    if args.csv:
        write_csv(rows, args.csv)
    if args.trace:
        write_trace(program, sim, rows, args.trace)
    if args.json:
        write_output(args.json, json.dumps(rows_to_json(rows), indent=1))
    return 0


def _whole_runs(ws, function: str, inputs) -> str:
    from ..core.npu.hal import standalone
    from ..core.npu.hal.call_log import CallLimits
    from ..core.npu.program.npu_ir import NpuProgram
    from ..core.npu.store.workspace_io import json_path
    from ..core.npu.hal.plugin_build import plugin_path
    from ..core.npu.hal.variant import build_variant

    plugin = plugin_path()
    variant = build_variant(ws)
    limits = CallLimits(NpuProgram.load(json_path(ws)))
    cpu = standalone.benchmark(ws.vmfb_path, function, inputs, parameters=ws.params_path)
    npu = standalone.benchmark(variant.vmfb, function, inputs, parameters=ws.params_path, variant=variant,
                               plugin=plugin, limits=limits)
    return (f"whole run (iree-benchmark-module, real time): CPU build {cpu * 1e3:.3f} ms, NPU variant standalone "
            f"{npu * 1e3:.3f} ms ({npu / cpu:.1f}x the CPU build; {len(variant.imports)} executables through the "
            f"plugin's C interpreter)")


def _from_file(args) -> int:
    """Measured cycles from a CSV beside the simulated ones, per task (a task-level file) and per dispatch."""
    import csv

    from ..core.npu.calibrate.measured import (COMPARE_COLUMNS, check_ids, comparison, format_comparison,
                                               read_measured, record)
    from ..core.npu.sim import simulate
    from ..core.textio import check_output_file
    from .simulate import load_source

    if args.json or args.trace or args.standalone:
        raise StudioError(args.measured, "--measured compares a file with the simulation: --json, --trace and "
                                         "--standalone belong to a profiled run")
    if args.csv:
        check_output_file(args.csv)
    measured = read_measured(args.measured)
    program, target, ws = load_source(args.workspace, args.npu_target)
    check_ids(measured, program)
    result = simulate(program, target)
    rows = comparison(program, result, measured)
    print(f"measured ({args.measured.name}) against NPU {result.target} simulated, in cycles; error = "
          f"(simulated - measured) / measured")
    print("\n".join(format_comparison(rows)))
    if args.csv:
        import io

        from ..core.textio import write_output

        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(COMPARE_COLUMNS)
        w.writerows(rows)
        write_output(args.csv, text.getvalue())  # one line naming the file on failure
    if ws is not None:  # the app's schedule shows them beside the simulation
        record(ws.root, measured)
    return 0
