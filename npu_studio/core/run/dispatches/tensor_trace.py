"""Each dispatch's tensors from a real build of the model, with IREE's dispatch tensor tracing.

The build is compiled again with `--iree-flow-trace-dispatch-tensors` (and
the workspace's substitutions, fitted to this build's buffer layout by
`executables/rebase`, since tracing changes it): IREE inserts a trace of every dispatch's inputs and outputs, and a
child process (`tensor_trace_server`) runs it with a HAL debug sink that
saves them. The trace pass runs in the flow pipeline, so the build starts
from the dispatch-creation snapshot: edits up to that phase are in it, an
edit of the flow snapshot itself is not.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import processes
from ...compile.options import CompileOptions
from ...compile.toolchain import compile_failure, compiler_version
from ...errors import RunFailed, StudioError
from ...executables.rebase import rebase_flags, without_substitutions
from ...textio import parse_json, read_bytes, write_text_atomic
from ...workspace import trust
from ...workspace.confine import folder_inside
from .dispatch_server import load_array
from .iree_dispatches import move_into_cache

TRACE_FLAG = "--iree-flow-trace-dispatch-tensors"
FROM_PHASE = "dispatch-creation"


@dataclass
class TraceEvent:
    executable: str
    export: str
    kind: str  # "inputs" | "outputs"
    tensors: list[np.ndarray]


def _key(source: Path, options: CompileOptions) -> str:
    h = hashlib.sha256(Path(source).read_bytes())
    for part in (*options.flags(), *options.extra_flags, compiler_version()):
        h.update(part.encode())
        named = Path(part.rsplit("=", 1)[-1])
        if part.startswith("--iree-hal-substitute") and named.is_file():
            h.update(named.read_bytes())  # the substituted text is part of the build
    return h.hexdigest()[:16]


def build_traced(source: Path, options: CompileOptions, cache_dir: Path, timeout: float = 1800, *,
                 root: Path) -> Path:
    """The module built from `source` (a dispatch-creation snapshot) with dispatch tensor tracing, cached
    in `cache_dir`, inside the workspace `root`."""
    cache_dir = folder_inside(root, cache_dir)
    options = options.with_(from_phase=FROM_PHASE, extra_flags=(*options.extra_flags, TRACE_FLAG))
    vmfb = cache_dir / f"traced-{_key(source, options)}.vmfb"
    if vmfb.is_file():
        return vmfb
    from ...compile.toolchain import iree_compile

    with tempfile.TemporaryDirectory(prefix="npu-studio-traced-") as tmp:
        out = Path(tmp) / vmfb.name
        base = [str(options.compiler or iree_compile()), str(source), *options.flags(),
                *without_substitutions(options.extra_flags)]
        fitted = rebase_flags(base, options.extra_flags, Path(tmp) / "rebase", what="the traced build",
                              timeout=timeout)
        cmd = [*base, *fitted.flags, "-o", str(out)]
        why = compile_failure(cmd, timeout)
        if why is not None:
            raise StudioError(source, f"the traced build does not compile: {why}")
        for old in vmfb.parent.glob("traced-*.vmfb"):  # one traced build per cache folder
            old.unlink(missing_ok=True)
            old.with_suffix(".json").unlink(missing_ok=True)
        notes = vmfb.with_suffix(".json")
        write_text_atomic(notes, json.dumps(fitted.notes))  # the notes first: a cached build always has them
        move_into_cache(out, vmfb)
    return vmfb


def notes(vmfb: Path) -> list[str]:
    """What became of each substitution in this traced build."""
    path = Path(vmfb).with_suffix(".json")
    return list(parse_json(read_bytes(path), path)) if path.is_file() else []  # BadFile: damaged, too deep


def run_traced(vmfb: Path, function: str, inputs: list[np.ndarray], parameters: Path | None = None,
               timeout: float = 1800) -> tuple[list[TraceEvent], list[np.ndarray]]:
    """Run `function` of a traced build: every trace event in execution order, and the outputs."""
    trust.require_for_path(vmfb, f"tracing {Path(vmfb).name}")
    with tempfile.TemporaryDirectory(prefix="npu-studio-tensor-trace-") as tmp:
        tmp = Path(tmp)
        paths = []
        for i, a in enumerate(inputs):
            paths.append(str(tmp / f"input{i}.npy"))
            np.save(paths[-1], np.asarray(a, order="C"))  # not ascontiguousarray: a rank-0 array stays rank 0
        cmd = [*processes.module_command("npu_studio.core.run.dispatches.tensor_trace_server"), str(vmfb),
               function, str(tmp), *paths]
        if parameters is not None:
            cmd.append(f"--parameters={parameters}")
        try:
            proc = processes.run_child(cmd, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RunFailed(vmfb, f"the traced run did not finish within {timeout:g} s; stopped") from None
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            raise RunFailed(vmfb, lines[-1] if lines else f"the traced run exited with {proc.returncode}")
        reply = json.loads(proc.stdout.strip().splitlines()[-1])
        events = []
        for k, (label, count) in enumerate(reply["events"]):
            target, _, kind = label.rpartition(" ")
            exe, _, export = target.partition("::")
            events.append(TraceEvent(exe, export, kind, [load_array(tmp / f"t{k}_{j}.npy") for j in range(count)]))
        outputs = [load_array(tmp / f"output{i}.npy") for i in range(reply["outputs"])]
    return events, outputs


def outputs_by_dispatch(events: list[TraceEvent], exports: list[str | None]) -> dict[int, list[np.ndarray]]:
    """Each dispatch's traced outputs: the k-th `outputs` event of an export is its k-th call site."""
    sites: dict[str, list[int]] = {}
    for index, export in enumerate(exports):
        sites.setdefault(export or "", []).append(index)
    found: dict[int, list[np.ndarray]] = {}
    for e in events:
        if e.kind == "outputs" and sites.get(e.export):
            found[sites[e.export].pop(0)] = e.tensors
    return found
