"""npu-studio simulate MODEL_OR_WORKSPACE [--backend NAME] [--target FILE] [--json OUT] [--csv OUT] [--trace OUT] [--check] [--input x.npy ...]

Simulates the NPU program's timing and prints a summary. The source is a
model.npu.json, a workspace (its npu/model.npu.json, or the NPU pipeline
run on its flow snapshot), a flow .mlir file or a model (compiled into
its workspace first). A workspace keeps the result in npu/model.sim.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import StudioError
from .common import add_backend_option, npu_target


def add_parser(sub) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate the NPU program: cycles, utilization, memory, schedule trace",
        description="Simulate the timing of an NPU program (model.npu.json, a workspace, a flow "
        ".mlir file or a model) on its target and print cycles, utilization per engine and the "
        "bound of each dispatch.",
    )
    p.add_argument("source", type=Path, metavar="MODEL_OR_WORKSPACE")
    add_backend_option(p)
    p.add_argument("--target", dest="npu_target", default=None, metavar="FILE",
                   help="NPU target TOML ('tiny' names a bundled one); a workspace or model is "
                   "planned for it, a model.npu.json is simulated on it")
    p.add_argument("--json", type=Path, default=None, metavar="OUT",
                   help="write the result (docs/npu-sim-result.schema.json)")
    p.add_argument("--csv", type=Path, default=None, metavar="OUT",
                   help="write the per-dispatch table as CSV")
    p.add_argument("--trace", type=Path, default=None, metavar="OUT",
                   help="write the schedule as Chrome trace-event JSON (open it in Perfetto)")
    p.add_argument("--check", action="store_true",
                   help="also compute the numbers (functional simulation) and compare them with the "
                   "IREE CPU build and onnxruntime (docs/npu-sim-check.md)")
    p.add_argument("--input", action="append", type=Path, default=[], metavar="X.npy",
                   help="input of --check, once per model input (default: seeded random inputs)")
    p.set_defaults(func=run)


def load_source(source: Path, target_path, backend: str | None = None):
    """(program, target, workspace or None) for any accepted source. Without --backend, a
    workspace's recorded backend (or a model.npu.json's) reads --target and plans."""
    from ..core.npu.backend import registry
    from ..core.npu.program.npu_ir import NpuError
    from ..core.npu.plan.passes import run_npu_pipeline
    from ..core.npu.store.sim_store import load_program
    from ..core.npu.store.workspace_io import json_path, run_for_workspace
    from ..core.workspace.workspace import open_or_compile

    if backend is not None:
        registry.load(backend)  # BackendError names a missing or broken backend before any work
    if source.is_file() and source.name.endswith(".json"):
        program = load_program(source)
        target = npu_target(backend or program.target.backend, target_path) if target_path else None
        return program, target or program.target, None
    try:
        if source.suffix == ".mlir" and source.is_file():
            program = run_npu_pipeline(source, npu_target(backend, target_path))
            return program, program.target, None
        ws = open_or_compile(source)  # import and compile errors name the model
        if backend is None and target_path is None and json_path(ws).exists():
            program = load_program(json_path(ws))
        else:  # TargetError file:line: key, read with the backend's keys
            program = run_for_workspace(ws, target_path, backend=backend)
    except NpuError as e:
        raise StudioError(source, str(e).replace("\n", "; ")) from None
    return program, program.target, ws


def run(args) -> int:
    from ..core.npu.sim import simulate
    from ..core.npu.sim.export import summary, write_csv
    from ..core.npu.store.sim_store import save_result
    from ..core.npu.sim.trace import write_trace
    from ..core.textio import check_output_file

    if args.input and not args.check:
        raise StudioError(args.input[0], "--input is the input of --check; add --check")
    for out in (args.json, args.csv, args.trace):
        if out:
            check_output_file(out)  # a folder or a missing folder: one line, before any work
    program, target, ws = load_source(args.source, args.npu_target, args.backend)
    if args.check and ws is None:
        raise StudioError(args.source, "--check needs a workspace or a model (it compares with its build)")
    result = simulate(program, target)  # SimError: SRAM too small, dependency cycle
    sys.stdout.write(summary(program, result, target))
    # Each writer names its own file in a BadFile (write_output, write_text_inside): a full disk
    # or a FIFO is reported against the output, never against the source.
    if ws is not None:
        save_result(ws, result)
    if args.json:
        result.save_json(args.json)
    if args.csv:
        write_csv(program, result, args.csv)
    if args.trace:
        write_trace(program, result, args.trace)
    if args.check:
        from ..core.npu.numerics.check import REPORT_NAME, check, load_inputs
        from ..core.run.dispatches.iree_dispatches import CACHE_DIR
        from ..core.workspace.confine import write_text_inside

        report = check(ws, program, load_inputs(ws, args.input) if args.input else None)
        print("\n".join(report.summary_lines()))
        write_text_inside(ws.root, Path(CACHE_DIR) / REPORT_NAME, json.dumps(report.to_dict(), indent=1))
        return 0 if report.ok else 1
    return 0
