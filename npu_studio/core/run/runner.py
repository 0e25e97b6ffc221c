"""Run a .vmfb with the IREE runtime in a fresh process.

A fresh process per run means a crash or a bad module cannot take the app
down, and numbers never come from state left over by an earlier run.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..lazy_import import lazy_module

from .. import processes
from ..dtypes import is_float
from ..errors import RunFailed
from ..processes import module_command
from ..workspace import trust
from . import time_budget
from .signature import FunctionSignature, check_fits_in_memory, imported_signatures, public_functions, read_npy_input

np = lazy_module("numpy")  # loaded on first use: not at the app's start

DRIVERS = {"llvm-cpu": "local-task", "vmvx": "local-task"}


@dataclass
class RunResult:
    function: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


def random_inputs(sig: FunctionSignature, seed: int = 0, source: Path | None = None) -> list[np.ndarray]:
    """Seeded inputs matching `sig`: floats in [-1, 1), ints in [-8, 8). `source` is named in errors."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, spec in enumerate(sig.inputs):
        if any(d is None for d in spec.shape):
            raise RunFailed(source, f"input {spec} of @{sig.name} has a dynamic dim; pass --input files")
        # The random draw is float64 before the cast: up to 8 bytes an element alive at once.
        draw = 8 // spec.numpy_dtype.itemsize + 1
        check_fits_in_memory(spec.nbytes, source, f"input {i} ({spec}) of @{sig.name}", copies=draw)
        dtype = spec.numpy_dtype
        if is_float(spec.dtype):  # bf16 and f8 too, which numpy does not count as floating
            arrays.append(rng.uniform(-1, 1, spec.shape).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, spec.shape).astype(dtype))
        else:
            arrays.append(rng.integers(-8, 8, spec.shape).astype(dtype))
    return arrays


def pick_function(signature_source: Path, name: str | None = None) -> FunctionSignature:
    sigs = public_functions(signature_source) or imported_signatures(signature_source)
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
    timeout: float | None = None,
    parameters: Path | None = None,
) -> list[np.ndarray]:
    """Call `function` in `vmfb` on `inputs` in a child process; returns its outputs.

    `parameters` is the `.irpa` archive the module's named parameters are read from. Without
    `timeout`, the limit follows the bytes of module, parameters and inputs (`time_budget`).
    """
    trust.require_for_path(vmfb, f"running {Path(vmfb).name}")  # its native code
    if timeout is None:
        timeout = time_budget.iree_run_seconds(time_budget.file_bytes(vmfb, parameters)
                                               + time_budget.array_bytes(inputs))
    with tempfile.TemporaryDirectory(prefix="npu-studio-run-") as tmp:
        tmp = Path(tmp)
        in_paths = []
        for i, arr in enumerate(inputs):
            p = tmp / f"input{i}.npy"
            np.save(p, arr)
            in_paths.append(str(p))
        cmd = [*module_command("npu_studio.core.run.run_vmfb"), str(vmfb), function, str(tmp), *in_paths]
        if parameters is not None:
            cmd.append(f"--parameters={parameters}")
        try:
            proc = processes.run_child(cmd, timeout=timeout)  # killed with us, and on Ctrl+C
        except subprocess.TimeoutExpired:
            raise RunFailed(vmfb, f"@{function} did not finish within {time_budget.seconds_text(timeout)} "
                                  f"(the limit for its module, parameters and inputs); stopped") from None
        if proc.returncode != 0:
            raise RunFailed(vmfb, runtime_reason(proc.stderr, proc.returncode))
        count = int(proc.stdout.strip().splitlines()[-1])
        return [np.load(tmp / f"output{i}.npy") for i in range(count)]


_RAISED = re.compile(r"^\w+(?:Error|Exception): (?:Error invoking function: )?(?P<reason>.+)$")


def runtime_reason(stderr: str, returncode: int) -> str:
    """IREE's own error line from a failed run's stderr: the exception the runtime raised (its VM stack
    frames, `[ 0] bytecode module@2:64 -`, follow it and say nothing), else the last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    raised = [m.group("reason").strip() for m in map(_RAISED.match, lines) if m]
    if raised:
        return raised[-1]
    return lines[-1] if lines else f"runtime exited with {returncode}"


def load_inputs(sig: FunctionSignature, paths: list[Path], source: Path | None = None) -> list[np.ndarray]:
    """`.npy` files for `sig`'s inputs, each header checked against the signature before loading."""
    if len(paths) != len(sig.inputs):
        raise RunFailed(source, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(paths)} --input files")
    return [read_npy_input(p, spec, f"input {i} of @{sig.name}") for i, (p, spec) in enumerate(zip(paths, sig.inputs))]
