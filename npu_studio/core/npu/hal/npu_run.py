"""`run --npu`: the NPU variant run by IREE's runtime, checked against the CPU build and onnxruntime.

The variant (built or reused, `variant`) runs in a fresh process with the
plugin (`plugin_build`) and the functional simulator behind it
(`inprocess`). Its outputs are compared with the workspace's plain CPU
build and with onnxruntime on the source model, as `npu check` does; each
plugin call is compared with IREE's CPU build of that dispatch on the same
inputs, which names the first dispatch whose NPU result differs.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ... import processes
from ...errors import RunFailed, StudioError
from ...processes import module_command
from ...run.runner import pick_function, random_inputs, run_vmfb
from ...workspace import trust
from ...workspace.workspace import Workspace
from ...run.dispatches import iree_dispatches
from ..numerics.check import (Comparison, _compare, against_onnxruntime, arithmetic_of, diverges, final_line,
                              quantized_outputs, run_onnxruntime)
from ..numerics.functional_sim import DispatchOutcome, TileFault
from ..store.workspace_io import json_path
from ..backend.api import BackendError
from ..backend.registry import backend_of
from ..program.npu_ir import NpuProgram
from . import standalone
from .call_log import CallLimits, CallWatch
from .inprocess import COMPUTED_BY, COMPUTED_BY_C
from .plugin_build import plugin_path
from .variant import Variant, build_variant


MODES = {"in-process": "in-process: the NPU backend's runner behind the plugin",
         "standalone": "standalone: iree-run-module, the plugin's C interpreter"}


@dataclass
class NpuRunReport:
    function: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    variant: Variant
    calls: list[DispatchOutcome]  # one per plugin call, in the order IREE made them
    plugin_calls: int  # the plugin's own count
    vs_cpu: Comparison | None
    vs_onnxruntime: Comparison | None
    first_divergent: DispatchOutcome | None
    npu_seconds: float
    cpu_seconds: float | None
    notes: list[str] = field(default_factory=list)
    mode: str = "in-process"  # or "standalone": iree-run-module, the plugin's C interpreter

    @property
    def ok(self) -> bool:
        comps = [c for c in (self.vs_cpu, self.vs_onnxruntime) if c is not None]
        return self.first_divergent is None and all(c.ok for c in comps)

    def summary_lines(self) -> list[str]:
        v = self.variant
        npu_sites = sorted(d for r in v.imports for d in r.dispatches)
        lines = [f"NPU variant of @{self.function}: {len(npu_sites)} dispatches through the NPU plugin "
                 f"({len(v.imports)} executables replaced), {len(v.cpu)} on IREE's CPU code"
                 f"{' (reused)' if v.reused else f', built in {v.build_seconds:.2f} s'}",
                 f"  {self.plugin_calls} plugin calls, run in {self.npu_seconds:.2f} s ({MODES[self.mode]})"]
        lines += [c.line() for c in (self.vs_cpu, self.vs_onnxruntime) if c is not None]
        for r in v.cpu:
            lines.append(f"  dispatch #{r['dispatch']} on the CPU: {r['reason']}")
        d = self.first_divergent
        if d is not None:
            lines.append(f"  first divergent dispatch: #{d.index} {d.symbol}: max error {d.max_error:.3g} "
                         f"against IREE's result on the same inputs (largest value {d.scale:.3g})")
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(final_line(self.ok, (self.vs_cpu, self.vs_onnxruntime)))
        return lines

    def to_dict(self) -> dict:
        def comp(c):
            return None if c is None else c.to_dict()
        return {"format": "npu-studio.npu-run", "version": 1, "ok": self.ok, "mode": self.mode,
                "function": self.function,
                "plugin_calls": self.plugin_calls, "npu_dispatches": sorted(d for r in self.variant.imports
                                                                            for d in r.dispatches),
                "cpu_dispatches": self.variant.cpu, "vs_cpu": comp(self.vs_cpu),
                "vs_onnxruntime": comp(self.vs_onnxruntime),
                "first_divergent": None if self.first_divergent is None else self.first_divergent.index,
                "npu_seconds": self.npu_seconds, "cpu_seconds": self.cpu_seconds, "notes": self.notes}


def run_npu(ws: Workspace, inputs: list[np.ndarray] | None = None, *, seed: int = 0, function: str | None = None,
            fault: TileFault | None = None, compare_dispatches: bool = True, cpu_build: bool = True,
            onnxruntime: bool = True, timeout: float | None = None, mode: str = "in-process") -> NpuRunReport:
    """Build (or reuse) the NPU variant, run it with the plugin, compare (see the module doc).

    Each plugin call is held to its dispatch's limit and the whole run to `timeout` (default: derived
    from the work, `CallLimits.run_seconds`); a run that overruns is stopped with one line naming the
    dispatch (RunFailed)."""
    if mode not in MODES:
        raise StudioError(None, f"unknown NPU run mode {mode!r} (one of {', '.join(MODES)})")
    if ws.vmfb_path is None or not ws.vmfb_path.is_file():
        raise StudioError(ws.root, "no vmfb; compile first")
    trust.require(ws.root, "running the NPU variant")  # before the variant or a cache is written
    program = NpuProgram.load(json_path(ws))
    backend = backend_of(program.target)  # BackendError names a missing one
    if mode == standalone.MODE and backend.loader is None:
        raise BackendError(backend.name, "has no loader for IREE's runtime: --standalone needs one")
    if mode != standalone.MODE and backend.runner is None:
        raise BackendError(backend.name, "has no runner: it cannot compute the NPU dispatches")
    # first: without a C compiler nothing else is done. In-process, the plugin only hands each
    # call to the backend's runner; standalone, the backend's loader executes the calls itself.
    plugin = backend.loader() if mode == standalone.MODE else plugin_path()
    # In-process, the runner gets the emitter's binary: emitted here, through the guard, so a broken
    # emitter is one line naming its backend before the variant is built (nothing written).
    binary = backend.emit(program).binary if mode != standalone.MODE and backend.emit else None
    variant = build_variant(ws)
    if mode == standalone.MODE:
        standalone.check_described(variant)  # before anything runs: one line naming the dispatch
    sig = pick_function(ws.snapshot_path("input"), function)
    if inputs is None:
        inputs = random_inputs(sig, seed, ws.user_model_path)
    elif len(inputs) != len(sig.inputs):
        raise StudioError(ws.root, f"@{sig.name} takes {len(sig.inputs)} inputs, got {len(inputs)}")
    flow = ws.snapshot_path("flow")
    dispatch_vmfb = (iree_dispatches.build(flow, ws.root / iree_dispatches.CACHE_DIR, root=ws.root)
                     if compare_dispatches else None)
    limits = CallLimits(program)
    t0 = time.perf_counter()
    if mode == standalone.MODE:
        outputs, calls, plugin_calls = standalone.run(variant, plugin, sig.name, inputs, len(sig.outputs),
                                                      limits=limits, parameters=ws.params_path,
                                                      dispatch_vmfb=dispatch_vmfb, fault=fault, timeout=timeout)
    else:
        outputs, calls, plugin_calls = _run_child(ws, variant, plugin, sig.name, inputs, flow, dispatch_vmfb,
                                                  fault, limits, timeout, binary, backend.name)
    npu_seconds = time.perf_counter() - t0
    vs_cpu, cpu_seconds = None, None
    arithmetic = arithmetic_of(flow)  # the one tolerance rule (run/tolerance) reads what the program computes in
    if cpu_build:
        t0 = time.perf_counter()
        exact = quantized_outputs(ws.source_path, len(outputs)) is not None  # as simulate --check
        vs_cpu = _compare("iree-cpu", outputs, run_vmfb(ws.vmfb_path, sig.name, inputs, parameters=ws.params_path),
                          exact=exact, types=arithmetic.program)
        cpu_seconds = time.perf_counter() - t0
    notes: list[str] = []
    vs_ort = None
    if onnxruntime and ws.source_path.suffix.lower() == ".onnx":
        try:
            vs_ort = against_onnxruntime(ws.source_path, outputs, run_onnxruntime(ws.source_path, inputs), arithmetic)
        except ImportError:
            notes.append("onnxruntime is not installed: no comparison with it")
        except Exception as exc:  # onnxruntime's own errors (unsupported op, ...) are not ours
            notes.append(f"onnxruntime could not run the model: {' '.join(str(exc).split())[:200]}")
    at_load = sorted({c.index for c in calls if c.computed_by == COMPUTED_BY_C}) if mode != standalone.MODE else []
    if at_load:
        notes.append(f"{_numbered('dispatch', at_load)} inside an initializer, run while IREE loads the module: "
                     "computed by the plugin's C interpreter (IREE's Python binding holds the GIL while loading)")
    first = next((c for c in calls if diverges(c, arithmetic)), None)
    return NpuRunReport(sig.name, inputs, outputs, variant, calls, plugin_calls, vs_cpu, vs_ort, first,
                        npu_seconds, cpu_seconds, notes, mode)


def _numbered(noun: str, indices: list[int]) -> str:
    return f"{noun}{'es' if len(indices) > 1 else ''} {', '.join(f'#{i}' for i in indices)}"


def _run_child(ws, variant, plugin, function, inputs, flow, dispatch_vmfb, fault, limits: CallLimits, timeout,
               binary: bytes | None, backend_name: str):
    if timeout is None:
        timeout = limits.run_seconds(variant, ws.params_path, inputs)
    with tempfile.TemporaryDirectory(prefix="npu-studio-npu-run-") as tmp:
        tmp = Path(tmp)
        in_paths = []
        for i, a in enumerate(inputs):
            np.save(tmp / f"input{i}.npy", a)
            in_paths.append(str(tmp / f"input{i}.npy"))
        if binary is not None:
            (tmp / "program.bin").write_bytes(binary)
        request = {"binary": str(tmp / "program.bin") if binary is not None else None,
                   "workspace": str(ws.root), "vmfb": str(variant.vmfb), "plugin": str(plugin),
                   "exec": str(variant.exec_path), "log": str(tmp / "calls.tsv"),
                   "function": function, "inputs": in_paths, "out_dir": str(tmp), "flow": str(flow),
                   "program": str(json_path(ws)), "parameters": str(ws.params_path) if ws.params_path else None,
                   "dispatch_vmfb": str(dispatch_vmfb) if dispatch_vmfb else None,
                   "fault": None if fault is None else {"dispatch": fault.dispatch, "tile": fault.tile,
                                                        "delta": fault.delta, "hang": fault.hang}}
        (tmp / "request.json").write_text(json.dumps(request), encoding="utf-8")
        trust.require_for_path(variant.vmfb, "running the NPU variant")
        cmd = [*module_command("npu_studio.core.npu.hal.inprocess"), str(tmp / "request.json")]
        watch = CallWatch(tmp / "calls.tsv", limits)
        try:
            proc = processes.run_child(cmd, timeout=timeout, watch=watch)
        except processes.Overdue as exc:
            raise RunFailed(variant.vmfb, exc.why) from None
        except subprocess.TimeoutExpired:
            raise RunFailed(variant.vmfb, watch.timed_out(timeout, "the NPU run")) from None
        report_path = tmp / "calls.json"
        if proc.returncode != 0:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            ours = [ln for ln in lines if ln.startswith("npu plugin:")]  # the C interpreter's own line
            died = (f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}")
            raise RunFailed(variant.vmfb, (ours or lines or [f"the NPU run ended with {died} (in-process, in the "
                                                            f"runner of NPU backend {backend_name!r})"])[-1])
        report = json.loads(report_path.read_text(encoding="utf-8"))
        count = int(proc.stdout.strip().splitlines()[-1])
        outputs = [np.load(tmp / f"output{i}.npy") for i in range(count)]
    calls = [DispatchOutcome(c["dispatch"], c["symbol"], c.get("computed_by", COMPUTED_BY), c["tiles"], c["seconds"],
                             c["max_error"], c["scale"], c["dtype"], cycles=c.get("cycles")) for c in report["calls"]]
    return outputs, calls, report["plugin_calls"]
