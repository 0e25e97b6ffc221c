"""npu-studio npu MODEL_OR_WORKSPACE [--backend NAME] [--target FILE] [--strict] [--json OUT] [--mlir OUT]

Runs the NPU pipeline on a compile's `flow` snapshot: a workspace, a
flow-phase .mlir file, or a model (compiled into its workspace first).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from ..core.errors import StudioError, os_error
from ..core.textio import check_output_file, write_output
from ..core.units import format_bytes
from ..core.workspace.workspace import open_or_compile
from .common import add_backend_option, npu_target


def add_parser(sub) -> None:
    p = sub.add_parser(
        "npu",
        help="map a model's dispatches onto the NPU: legality, tiles, memory, tasks",
        description="Run the NPU pipeline (npu-legalize, npu-tile, npu-plan-memory, "
        "npu-schedule) on the flow snapshot of a workspace, a flow .mlir file or a model.",
    )
    p.add_argument("source", type=Path, metavar="MODEL_OR_WORKSPACE")
    p.add_argument("--target", dest="npu_target", default=None, metavar="FILE",
                   help="NPU target TOML (default resources/targets/default.toml; "
                   "'tiny' names a bundled one)")
    add_backend_option(p)
    p.add_argument("--strict", action="store_true",
                   help="reject the model if any dispatch cannot run on the NPU")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write model.npu.json")
    p.add_argument("--mlir", type=Path, default=None, metavar="OUT",
                   help="write the program in the npu MLIR dialect")
    p.set_defaults(func=run)


def flow_snapshot(source: Path) -> Path:
    """The flow snapshot for a workspace, flow .mlir file or model file."""
    if source.suffix == ".mlir" and source.is_file():
        return source
    ws = open_or_compile(source)
    path = ws.snapshot_path("flow")
    if not path.exists():
        raise StudioError(ws.root, "no flow snapshot; compile first")
    return path


def dispatch_line(program, d) -> str:
    """One dispatch: where it runs and with what, or the rule that kept it off."""
    if not d.legal:
        return f"Dispatch #{d.index}: {d.kind} -> CPU fallback: {d.reason}"
    if d.unit == "dma":
        (task,) = program.tasks_of(d.index)
        moved = sum(s.bytes for s in task.steps)
        pad = f", pad value {d.pad_value}" if d.pad_value else ""
        return (f"Dispatch #{d.index}: {d.kind} -> NPU dma ({d.transfer} transfer{pad}, "
                f"{format_bytes(moved)} moved)")
    tile = "x".join(str(t) for t in d.tile_sizes)
    peak = program.dispatch_sram_peak(d.index)
    extra = f", {d.dtype} -> acc {d.acc_dtype}" if d.acc_dtype and d.acc_dtype != d.dtype else ""
    if d.transposed:
        extra += f", {'/'.join(d.transposed)} transposed by {d.transpose_by}"
    line = (f"Dispatch #{d.index}: {d.kind} -> NPU {d.unit} "
            f"(tiles {d.num_tiles}, {tile}, SRAM peak {format_bytes(peak)}{extra})")
    return line + (f"\n    epilogue: {d.epilogue}" if d.requant else "")


def report(program) -> str:
    from ..core.npu.report.coverage import coverage

    lines = [dispatch_line(program, d) for d in program.dispatches]
    ops = Counter(t.op for t in program.tasks)
    steps = Counter(s.kind for t in program.tasks for s in t.steps)
    lines.append("")
    lines.extend(coverage(program).lines())
    lines.append(f"target {program.target.name}; {len(program.tasks)} tasks: "
                 + ", ".join(f"{n} {op}" for op, n in sorted(ops.items())))
    lines.append("steps: " + ", ".join(f"{n} {k}" for k, n in sorted(steps.items()))
                 + f"; SRAM peak {format_bytes(program.sram_peak)} of "
                 f"{format_bytes(program.target.sram_bytes)}"
                 f"; DRAM {format_bytes(program.dram_peak)}")
    return "\n".join(lines) + "\n"


def run(args) -> int:
    from ..core.npu.program.npu_dialect import to_mlir
    from ..core.npu.plan.passes import run_npu_pipeline
    for out in (args.json, args.mlir):
        if out is not None:
            check_output_file(out)  # before any work
    # BackendError names a missing or broken backend; TargetError file:line: key
    target = npu_target(args.backend or "generic", args.npu_target)
    path = flow_snapshot(args.source)  # import and compile errors name the model
    program = run_npu_pipeline(path, target, strict=args.strict)  # NpuError names the snapshot
    sys.stdout.write(report(program))
    for out, write in ((args.json, program.save_json),
                       (args.mlir, lambda p: write_output(p, to_mlir(program)))):
        if out is not None:
            try:
                write(out)
            except OSError as exc:
                raise os_error(out, exc, "cannot write") from None
    return 0
