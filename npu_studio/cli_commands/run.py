"""npu-studio run WORKSPACE [--input x.npy ...] [--function NAME] [--seed N] [--output-dir DIR] [--npu [--backend NAME] [--target FILE] [--standalone]]"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..core.errors import StudioError
from ..core.run.runner import load_inputs, pick_function, random_inputs, run_vmfb
from ..core.textio import check_output_dir, write_output
from ..core.workspace.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run the workspace's vmfb with the IREE runtime",
                       description="Run the compiled module in a fresh process on .npy inputs, or on "
                                   "seeded random inputs built from the function signature.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--input", action="append", type=Path, default=[], help=".npy file, once per argument")
    p.add_argument("--function", help="entry point (default: the first public one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--output-dir", type=Path, help="save outputs here as output<i>.npy")
    p.add_argument("--npu", action="store_true",
                   help="run the NPU variant: NPU dispatches through the NPU plugin (the functional simulator "
                        "behind IREE's runtime), checked against the CPU build and onnxruntime")
    p.add_argument("--backend", default=None, metavar="NAME",
                   help="with --npu: the NPU backend (`npu-studio backends`; default: the workspace's)")
    p.add_argument("--target", dest="npu_target", metavar="FILE",
                   help="with --npu: NPU target TOML to run the NPU pipeline with first (default: the workspace's "
                        "NPU program, else the bundled default target)")
    p.add_argument("--standalone", action="store_true",
                   help="with --npu: run the NPU variant with iree-run-module, the NPU dispatches computed by the "
                        "plugin's own C interpreter of the NPU program (no Python behind the plugin)")
    p.set_defaults(func=run)


def run_workspace(ws: Workspace, inputs: list[np.ndarray] | list[Path] | None, function: str | None = None,
                  seed: int = 0):
    """Run the workspace's build on arrays, on `.npy` paths (checked against the signature) or on random inputs."""
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no vmfb; compile first")
    sig = pick_function(ws.snapshot_path("input"), function)
    if inputs is None:
        inputs = random_inputs(sig, seed, ws.user_model_path)
    elif inputs and all(isinstance(p, Path) for p in inputs):
        inputs = load_inputs(sig, inputs, ws.root)
    elif len(inputs) != len(sig.inputs):
        raise StudioError(ws.root, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(inputs)}")
    return sig, inputs, run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)


def summary(out: np.ndarray) -> str:
    shape = "x".join(map(str, out.shape)) or "scalar"
    if out.size == 0:
        return f"{out.dtype} {shape} (empty)"
    return f"{out.dtype} {shape} min={out.min():.6g} max={out.max():.6g} mean={out.mean():.6g}"


def run(args) -> int:
    ws = Workspace.open(args.workspace)
    if args.backend and not args.npu:
        raise StudioError(None, "--backend is the NPU backend of --npu; add --npu")
    if args.npu_target and not args.npu:
        raise StudioError(Path(args.npu_target), "--target is the NPU target of --npu; add --npu")
    if args.standalone and not args.npu:
        raise StudioError(None, "--standalone is a mode of --npu; add --npu")
    if args.output_dir:
        check_output_dir(args.output_dir)  # before the run, not after it
    if args.npu:
        return _run_npu(ws, args)
    sig, inputs, outputs = run_workspace(ws, list(args.input) or None, args.function, args.seed)
    _save_outputs(outputs, args.output_dir)
    return 0


def _run_npu(ws: Workspace, args) -> int:
    from ..core.npu.backend import registry
    from ..core.npu.hal.npu_run import run_npu
    from ..core.npu.program.npu_ir import NpuError
    from ..core.npu.store.workspace_io import json_path, run_for_workspace

    if args.backend:
        registry.load(args.backend)  # BackendError before anything is written
    try:
        if args.npu_target or args.backend or not json_path(ws).is_file():
            run_for_workspace(ws, args.npu_target, backend=args.backend)
    except NpuError as e:
        raise StudioError(ws.root, str(e).replace("\n", "; ")) from None
    inputs = None
    if args.input:
        sig = pick_function(ws.snapshot_path("input"), args.function)
        inputs = load_inputs(sig, list(args.input), ws.root)
    report = run_npu(ws, inputs, seed=args.seed, function=args.function,
                     mode="standalone" if args.standalone else "in-process")
    print("\n".join(report.summary_lines()))
    _save_outputs(report.outputs, args.output_dir, quiet=True)
    return 0 if report.ok else 1


def _save_outputs(outputs, output_dir: Path | None, quiet: bool = False) -> None:
    for i, out in enumerate(outputs):
        if not quiet:
            print(f"output{i}: {summary(out)}")
        if output_dir:
            data = io.BytesIO()
            np.save(data, out)
            write_output(output_dir / f"output{i}.npy", data.getvalue())  # never into a FIFO; names the file
