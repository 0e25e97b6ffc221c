"""npu-studio run WORKSPACE [--input x.npy ...] [--function NAME] [--seed N] [--output-dir DIR]"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.errors import StudioError
from ..core.runner import pick_function, random_inputs, run_vmfb
from ..core.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run the workspace's vmfb with the IREE runtime",
                       description="Run the compiled module in a fresh process on .npy inputs, or on "
                                   "seeded random inputs built from the function signature.")
    p.add_argument("workspace", type=Path)
    p.add_argument("--input", action="append", type=Path, default=[], help=".npy file, once per argument")
    p.add_argument("--function", help="entry point (default: the first public one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--output-dir", type=Path, help="save outputs here as output<i>.npy")
    p.set_defaults(func=run)


def run_workspace(ws: Workspace, inputs: list[np.ndarray] | None, function: str | None = None, seed: int = 0):
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no vmfb; compile first")
    sig = pick_function(ws.snapshot_path("input"), function)
    if inputs is None:
        inputs = random_inputs(sig, seed)
    elif len(inputs) != len(sig.inputs):
        raise StudioError(ws.root, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(inputs)}")
    return sig, inputs, run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path)


def run(args) -> int:
    ws = Workspace.open(args.workspace)
    inputs = None
    if args.input:
        try:
            inputs = [np.load(p) for p in args.input]
        except (OSError, ValueError) as exc:
            raise StudioError(None, f"cannot read input: {exc}") from None
    sig, inputs, outputs = run_workspace(ws, inputs, args.function, args.seed)
    for i, out in enumerate(outputs):
        print(f"output{i}: {out.dtype} {'x'.join(map(str, out.shape))} "
              f"min={out.min():.6g} max={out.max():.6g} mean={out.mean():.6g}")
        if args.output_dir:
            args.output_dir.mkdir(parents=True, exist_ok=True)
            np.save(args.output_dir / f"output{i}.npy", out)
    return 0
