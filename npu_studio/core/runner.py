"""Run a .vmfb with the IREE runtime in a fresh process.

A fresh process per run means a crash or a bad module cannot take the app
down, and numbers never come from state left over by an earlier run.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import StudioError
from .interpreter import module_command
from .signature import FunctionSignature, public_functions

DRIVERS = {"llvm-cpu": "local-task", "vmvx": "local-task"}


class RunFailed(StudioError):
    pass


@dataclass
class RunResult:
    function: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


def random_inputs(sig: FunctionSignature, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs matching `sig`: floats in [-1, 1), ints in [-8, 8)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in sig.inputs:
        if any(d is None for d in spec.shape):
            raise RunFailed(None, f"input {spec} of @{sig.name} has a dynamic dim; pass --input files")
        dtype = spec.numpy_dtype
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.uniform(-1, 1, spec.shape).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, spec.shape).astype(dtype))
        else:
            arrays.append(rng.integers(-8, 8, spec.shape).astype(dtype))
    return arrays


def pick_function(signature_source: Path, name: str | None = None) -> FunctionSignature:
    sigs = public_functions(signature_source)
    if name is not None:
        for sig in sigs:
            if sig.name == name:
                return sig
        raise RunFailed(signature_source, f"no public function @{name}")
    if not sigs:
        raise RunFailed(signature_source, "no public function taking and returning tensors")
    return sigs[0]


def run_vmfb(
    vmfb: Path,
    function: str,
    inputs: list[np.ndarray],
    *,
    driver: str = "local-task",
    timeout: float | None = 600,
    parameters: Path | None = None,
) -> list[np.ndarray]:
    """Call `function` in `vmfb` on `inputs` in a child process; returns its outputs.

    `parameters` is the `.irpa` archive the module's named parameters are read from.
    """
    with tempfile.TemporaryDirectory(prefix="npu-studio-run-") as tmp:
        tmp = Path(tmp)
        in_paths = []
        for i, arr in enumerate(inputs):
            p = tmp / f"input{i}.npy"
            np.save(p, arr)
            in_paths.append(str(p))
        cmd = [*module_command("npu_studio.core.run_vmfb"), str(vmfb), function, str(tmp), *in_paths]
        if parameters is not None:
            cmd.append(f"--parameters={parameters}")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            raise RunFailed(vmfb, lines[-1] if lines else f"runtime exited with {proc.returncode}")
        count = int(proc.stdout.strip().splitlines()[-1])
        return [np.load(tmp / f"output{i}.npy") for i in range(count)]
