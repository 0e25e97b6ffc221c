"""The NPU pipeline on a workspace: its results and target edits on disk.

Layout inside the workspace folder:

    npu/model.npu.json   the NpuProgram (docs/npu-ir.schema.json)
    npu/model.npu.mlir   the same program in the `npu` MLIR dialect
    npu/target.toml      the target text the results were built with, and
    npu/target.json      the file it came from (see target_store)

Qt-free: the app runs `run_for_workspace` in a worker thread, the CLI and
tests call it directly.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...textio import write_text_atomic
from ...workspace.confine import folder_inside
from ...workspace.workspace import Workspace
from ..backend import registry
from .all_or_nothing import before_writing
from ..program.npu_ir import NpuError, NpuProgram
from ..target import target_store
from ..target.target import read_target_text, target_file

NPU_DIR = "npu"
JSON_NAME = "model.npu.json"
MLIR_NAME = "model.npu.mlir"
FLOW_PHASE = "flow"

_TASK_START = re.compile(r'^\s*%t\d+ = "npu\.[\w.]+"\(')
_TASK_DISPATCH = re.compile(r"[{,] dispatch = (\d+) : i64")
_DISPATCH_INDEX = re.compile(r'^\s*"npu\.dispatch"\(\) \{index = (\d+) : i64')


def npu_dir(ws: Workspace) -> Path:
    return ws.root / NPU_DIR


def json_path(ws: Workspace) -> Path:
    return npu_dir(ws) / JSON_NAME


def mlir_path(ws: Workspace) -> Path:
    return npu_dir(ws) / MLIR_NAME


def flow_path(ws: Workspace) -> Path:
    """The compiled `flow` snapshot; NpuError when the workspace has none."""
    if FLOW_PHASE not in ws.manifest.phases:
        raise NpuError("no flow snapshot yet (compile the model first)", ws.root)
    return ws.snapshot_path(FLOW_PHASE)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def run_for_workspace(ws: Workspace, target_path: str | Path | None = None,
                      strict: bool = False, backend: str | None = None) -> NpuProgram:
    """Run the NPU pipeline on the workspace's flow snapshot for `backend` (None: the one the
    workspace records, generic at first) with the target at `target_path` (None: the backend's
    default) and write npu/model.npu.json, npu/model.npu.mlir, the target they were built
    with (target_store.record) and the backend into the manifest. Earlier results stay on
    disk when this raises (BackendError, TargetError, NpuError)."""
    from ..program.npu_dialect import to_mlir
    from ..plan.passes import run_npu_pipeline

    chosen = registry.load(backend or ws.manifest.npu_backend)  # BackendError names it
    path = target_file(target_path) if target_path is not None else chosen.default_target
    text = read_target_text(path)  # TargetError names the file
    target = registry.parse_target_for(chosen, text, path)
    program = run_npu_pipeline(flow_path(ws), target, strict=strict)
    folder_inside(ws.root, NPU_DIR)  # npu/ a symbolic link: refused, never written through
    before_writing(ws)  # inside all_or_nothing(): put back if the command fails later
    _write(json_path(ws), program.to_json())
    _write(mlir_path(ws), to_mlir(program))
    target_store.record(npu_dir(ws), text, path, target)
    if ws.manifest.npu_backend != chosen.name:
        ws.manifest.npu_backend = chosen.name
        ws.save()
    return program


def recorded_target(ws: Workspace) -> target_store.RecordedTarget | None:
    """The target the workspace's NPU results were built with, if it has any."""
    return target_store.recorded(npu_dir(ws))


def dispatch_line_ranges(mlir_text: str) -> dict[int, tuple[int, int]]:
    """1-based (first, last) lines of each dispatch's task ops in the `npu`
    MLIR form (`npu_dialect.to_mlir`), so a viewer can tint them.

    Tasks of one dispatch are consecutive; if a dispatch's tasks were ever
    interleaved with another's, its range is its `npu.dispatch` line alone.
    """
    decl: dict[int, int] = {}
    spans: dict[int, list[tuple[int, int]]] = {}
    start = None
    for no, line in enumerate(mlir_text.splitlines(), 1):
        if start is None:
            m = _DISPATCH_INDEX.match(line)
            if m:
                decl[int(m.group(1))] = no
            elif _TASK_START.match(line):
                start = no
                if line.rstrip().endswith("-> !npu.token"):  # a task without steps
                    start = _close(spans, start, no, line)
            continue
        if line.lstrip().startswith("})"):
            start = _close(spans, start, no, line)
    out: dict[int, tuple[int, int]] = {}
    for d, parts in spans.items():
        parts.sort()
        contiguous = all(b[0] == a[1] + 1 for a, b in zip(parts, parts[1:]))
        if contiguous:
            out[d] = (parts[0][0], parts[-1][1])
        elif d in decl:
            out[d] = (decl[d], decl[d])
    for d, no in decl.items():
        out.setdefault(d, (no, no))
    return out


def _close(spans: dict[int, list[tuple[int, int]]], start: int, end: int, line: str) -> None:
    m = _TASK_DISPATCH.search(line)
    if m:
        spans.setdefault(int(m.group(1)), []).append((start, end))
    return None
