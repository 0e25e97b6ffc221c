"""The NPU variant run by `iree-run-module`, the NPU dispatches computed by the plugin's C interpreter.

No Python sits behind the plugin here: it reads the variant's program
binary (`npu/hal/npu_program.npub`, exec_binary) from the path in
$NPU_STUDIO_NPU_EXEC and runs each dispatch's tasks itself
(plugin_src/npu_isa_decode.c, npu_exec.c). For the per-dispatch check the plugin keeps each
call's bindings before and after it in a folder ($NPU_STUDIO_NPU_DUMP);
each call's results are then compared with IREE's CPU build of that
dispatch on the same operands, which names the first dispatch whose NPU
result differs. `benchmark` times the same run with `iree-benchmark-module`.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ... import processes
from ...compile import toolchain
from ...compile.params import SCOPE
from ...errors import RunFailed, StudioError
from ...run import time_budget
from ..numerics.functional_sim import DispatchOutcome
from .call_log import CallLimits, CallWatch
from .exec_binary import load_program
from .exec_desc import ENV_DUMP, ENV_FAULT, ENV_LOG, ENV_PATH, ExecProgram
from .call_check import call_arrays, compare_calls, records_from_log
from ...workspace import trust
from .variant import Variant

MODE = "standalone"


def check_described(variant: Variant) -> ExecProgram:
    """What the variant's binary says each dispatch computes; StudioError naming the first NPU dispatch the
    C interpreter cannot run."""
    described = load_program(variant.exec_path)
    for rec in variant.imports:
        d = described.of(rec.dispatch)
        if d is None:
            raise StudioError(variant.exec_path, f"dispatch #{rec.dispatch} is not described; build the variant again")
        if d.reason:
            raise StudioError(variant.exec_path, f"dispatch #{d.dispatch} {d.symbol}: the standalone NPU model "
                                                 f"cannot run it: {d.reason}")
    return described


def _environment(variant: Variant, log: Path | None, dump: Path | None, fault) -> dict:
    env = dict(os.environ)
    env[ENV_PATH] = str(variant.exec_path)
    for name in (ENV_LOG, ENV_DUMP, ENV_FAULT):
        env.pop(name, None)
    if log is not None:
        env[ENV_LOG] = str(log)
    if dump is not None:
        env[ENV_DUMP] = str(dump)
    if fault is not None:
        env[ENV_FAULT] = f"{fault.dispatch}:hang" if getattr(fault, "hang", False) else \
            f"{fault.dispatch}:{fault.tile}:{float(fault.delta)!r}"
    return env


def _module_args(variant: Variant, plugin: Path, function: str, in_paths: list[Path],
                 parameters: Path | None) -> list[str]:
    args = ["--device=local-task", f"--module={variant.vmfb}", f"--function={function}",
            f"--executable_plugin={plugin}"]
    if parameters:
        args.append(f"--parameters={SCOPE}={parameters}")
    return args + [f"--input=@{p}" for p in in_paths]


def _plugin_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    ours = [ln for ln in lines if ln.startswith("npu plugin:")]
    return (ours or lines or ["iree-run-module failed"])[0][:400]


def run(variant: Variant, plugin: Path, function: str, inputs: list[np.ndarray], n_outputs: int, *,
        limits: CallLimits, parameters: Path | None = None, dispatch_vmfb: Path | None = None, fault=None,
        timeout: float | None = None):
    """(outputs, calls, plugin calls): one run of the variant under iree-run-module (see the module doc).

    Each plugin call is stopped after its dispatch's limit (`limits`), the whole run after `timeout`
    (default: from the module's bytes and the NPU dispatches' limits); either way one line names the
    dispatch."""
    trust.require_for_path(variant.vmfb, "running the NPU variant")
    described = check_described(variant)
    if timeout is None:
        timeout = limits.run_seconds(variant, parameters, inputs)
    with tempfile.TemporaryDirectory(prefix="npu-studio-standalone-") as tmp:
        tmp = Path(tmp)
        in_paths = []
        for i, a in enumerate(inputs):
            np.save(tmp / f"input{i}.npy", a)
            in_paths.append(tmp / f"input{i}.npy")
        log = tmp / "calls.tsv"
        dump = tmp / "calls" if dispatch_vmfb is not None else None
        if dump is not None:
            dump.mkdir()
        cmd = [str(toolchain.runtime_tool("iree-run-module")),
               *_module_args(variant, plugin, function, in_paths, parameters),
               *[f"--output=@{tmp / f'output{i}.npy'}" for i in range(n_outputs)]]
        watch = CallWatch(log, limits)
        try:
            proc = processes.run_child(cmd, timeout=timeout, env=_environment(variant, log, dump, fault), watch=watch)
        except processes.Overdue as exc:
            raise RunFailed(variant.vmfb, exc.why) from None
        except subprocess.TimeoutExpired:
            raise RunFailed(variant.vmfb, watch.timed_out(timeout, "the standalone NPU run")) from None
        if proc.returncode != 0:
            raise RunFailed(variant.vmfb, _plugin_error(proc.stderr))
        outputs = [np.load(tmp / f"output{i}.npy") for i in range(n_outputs)]
        records = records_from_log(variant, described, log)
        if records and dump is not None:
            compare_calls(dispatch_vmfb, records, lambda k: call_arrays(variant, dump, records[k]))
    calls = [DispatchOutcome(c["dispatch"], c["symbol"], "npu-plugin-c", c["tiles"], c["seconds"], c["max_error"],
                             c["scale"], c["dtype"]) for c in records]
    return outputs, calls, len(records)


_MEAN = re.compile(r"^BM_\S+_mean\s+([0-9.]+)\s*(ns|us|ms|s)\b", re.MULTILINE)
_PLAIN = re.compile(r"^BM_\S+\s+([0-9.]+)\s*(ns|us|ms|s)\b", re.MULTILINE)
_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def benchmark(vmfb: Path, function: str, inputs: list[np.ndarray], *, parameters: Path | None = None,
              variant: Variant | None = None, plugin: Path | None = None, limits: CallLimits | None = None,
              repetitions: int = 3, timeout: float | None = None) -> float:
    """Seconds per run of `vmfb` as iree-benchmark-module measures it (real time, mean of the repetitions);
    with `variant`, `plugin` and `limits`, the NPU variant in standalone mode, each plugin call held to
    its dispatch's limit. The default `timeout` is one run's limit for each repetition and one more."""
    trust.require_for_path(vmfb, f"timing {Path(vmfb).name}")
    if variant is not None:
        check_described(variant)
        if limits is None:
            raise ValueError("benchmarking the NPU variant needs its dispatches' limits")
    if timeout is None:
        one = (limits.run_seconds(variant, parameters, inputs) if variant is not None else
               time_budget.iree_run_seconds(time_budget.file_bytes(vmfb, parameters)
                                            + time_budget.array_bytes(inputs)))
        timeout = (repetitions + 1) * one
    with tempfile.TemporaryDirectory(prefix="npu-studio-bench-") as tmp:
        in_paths = []
        for i, a in enumerate(inputs):
            np.save(Path(tmp) / f"input{i}.npy", a)
            in_paths.append(Path(tmp) / f"input{i}.npy")
        args = [f"--module={vmfb}", "--device=local-task", f"--function={function}"]
        if plugin is not None:
            args.append(f"--executable_plugin={plugin}")
        if parameters:
            args.append(f"--parameters={SCOPE}={parameters}")
        cmd = [str(toolchain.runtime_tool("iree-benchmark-module")), *args, *[f"--input=@{p}" for p in in_paths],
               f"--benchmark_repetitions={repetitions}", "--benchmark_min_time=1x"]
        log = Path(tmp) / "calls.tsv"
        env = _environment(variant, log, None, None) if variant is not None else None
        watch = CallWatch(log, limits) if variant is not None else None
        try:
            proc = processes.run_child(cmd, timeout=timeout, env=env, watch=watch)
        except processes.Overdue as exc:
            raise RunFailed(vmfb, exc.why) from None
        except subprocess.TimeoutExpired:
            raise RunFailed(vmfb, watch.timed_out(timeout, "iree-benchmark-module") if watch else
                            f"iree-benchmark-module did not finish within {time_budget.seconds_text(timeout)}; "
                            "stopped") from None
        if proc.returncode != 0:
            raise RunFailed(vmfb, _plugin_error(proc.stderr))
    m = _MEAN.search(proc.stdout) or _PLAIN.search(proc.stdout)
    if m is None:
        raise RunFailed(vmfb, "iree-benchmark-module printed no real time")
    return float(m.group(1)) * _UNIT[m.group(2)]
