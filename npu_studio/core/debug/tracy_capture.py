"""Tracy captures of a run of a build, where the installed tools allow it.

The runtime wheel ships a Tracy-instrumented runtime (`iree/_runtime_libs_tracy`,
what `IREE_PY_RUNTIME=tracy` selects) with `iree-tracy-capture`. A capture runs
that runtime's `iree-run-module` on the build's module and inputs while
`iree-tracy-capture` records it, and keeps the trace in the workspace
(profiles/<build>.tracy, published like any other record). Each capability
that is missing says so in one line (`missing_*`) instead of being offered:
the compiler wheel is built without Tracy (compiler traces need a source
build), and no Tracy reader (`tracy-csvexport`) ships with the wheels, so
zones are not summarised per dispatch here: the capture opens in the Tracy
profiler.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import processes
from ..errors import RunFailed
from ..workspace import trust
from .compile_profile import PROFILES_DIR, publish_record, stamp_of

CAPTURE_SECONDS = 300.0


@dataclass
class TracyCapture:
    path: Path
    zones: int | None
    span_ms: float | None
    size_bytes: int
    summary_note: str  # why zones are not summarised per dispatch


@functools.cache
def _tracy_runtime_dir() -> Path | None:
    try:
        from iree import _runtime_libs_tracy
    except ImportError:
        return None
    return Path(_runtime_libs_tracy.__path__[0])


def missing_runtime_capture() -> str | None:
    """One line saying why a runtime capture cannot be made here, or None when it can."""
    folder = _tracy_runtime_dir()
    if folder is None:
        return "Tracy capture not available: the runtime wheel has no Tracy-instrumented runtime (iree._runtime_libs_tracy)"
    for tool in ("iree-run-module", "iree-tracy-capture"):
        if not (folder / tool).is_file():
            return f"Tracy capture not available: {tool} is missing from {folder}"
    return None


@functools.cache
def missing_compiler_tracing() -> str | None:
    """One line saying why the compiler cannot be traced with Tracy, or None when it can."""
    from ..compile import toolchain

    lib = toolchain.iree_compile().resolve().parent / "libIREECompiler.so"
    if lib.is_file() and _contains(lib, b"___tracy_emit_zone_begin"):
        return None
    return ("compiler tracing not available: the installed iree-compile is built without Tracy "
            "(compiler traces need a source build of IREE with Tracy enabled)")


def missing_zone_reader() -> str:
    return ("zones not summarised per dispatch: no Tracy reader (tracy-csvexport) is installed; "
            "open the capture in the Tracy profiler")


def capture_run(ws, build_name: str, function: str, inputs: list[np.ndarray], *,
                timeout: float = CAPTURE_SECONDS) -> TracyCapture:
    """Run `function` of the build's module on `inputs` under Tracy; the trace goes to profiles/<build>.tracy."""
    from ..workspace.variants import resolve

    reason = missing_runtime_capture()
    if reason is not None:
        raise RunFailed(None, reason)
    build = resolve(ws, build_name)
    if build.vmfb_path is None:
        raise RunFailed(ws.root, f"build {build_name!r} has no module to run")
    rel = Path(PROFILES_DIR) / f"{build_name}.tracy"
    found: dict = {}

    def measure(staging: Path) -> Path:
        trace = staging / "run.tracy"
        found.update(_capture(build.vmfb_path, function, inputs, trace, build.params_path, timeout))
        return trace

    publish_record(ws, rel, measure, build_name=build_name, stamp=stamp_of(build))
    path = ws.root / rel
    return TracyCapture(path, found.get("zones"), found.get("span_ms"), path.stat().st_size, missing_zone_reader())


def _capture(vmfb: Path, function: str, inputs: list[np.ndarray], trace: Path, params: Path | None,
             timeout: float) -> dict:
    trust.require_for_path(vmfb, f"capturing a Tracy trace of {Path(vmfb).name}")
    folder = _tracy_runtime_dir()
    port = _free_port()
    work = trace.parent / "tracy-inputs"
    work.mkdir(exist_ok=True)
    cmd = [str(folder / "iree-run-module"), f"--module={vmfb}", f"--function={function}", "--device=local-task"]
    for i, arr in enumerate(inputs):
        np.save(work / f"input{i}.npy", arr)
        cmd.append(f"--input=@{work / f'input{i}.npy'}")
    if params is not None:
        cmd.append(f"--parameters=model={params}")
    log = trace.parent / "capture.log"
    with open(log, "wb") as out:
        capture = processes.start_child([str(folder / "iree-tracy-capture"), "-o", str(trace), "-f", "-p", str(port)],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            env = dict(os.environ, TRACY_NO_EXIT="1", TRACY_PORT=str(port))
            run = processes.start_child(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env)
            try:
                _, err = run.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                processes.stop(run)
                raise RunFailed(vmfb, f"the traced run did not finish within {timeout:g} s; stopped") from None
            if run.returncode != 0:
                lines = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
                raise RunFailed(vmfb, lines[-1] if lines else f"iree-run-module exited {run.returncode}")
            deadline = time.monotonic() + 60
            while capture.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            processes.stop(capture)
    text = log.read_text(errors="replace")
    if not trace.is_file():
        raise RunFailed(vmfb, "iree-tracy-capture wrote no trace: " + (text.strip().splitlines() or ["no output"])[-1])
    zones = re.search(r"Zones:\s*([\d,]+)", text)
    span = re.search(r"Time span:\s*([\d.]+)\s*(ms|s|us)", text)
    span_ms = None
    if span:
        span_ms = float(span.group(1)) * {"ms": 1.0, "s": 1000.0, "us": 0.001}[span.group(2)]
    return {"zones": int(zones.group(1).replace(",", "")) if zones else None, "span_ms": span_ms}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _contains(path: Path, needle: bytes, chunk: int = 1 << 22) -> bool:
    with open(path, "rb") as f:
        tail = b""
        while block := f.read(chunk):
            if needle in tail + block:
                return True
            tail = block[-len(needle):]
    return False
