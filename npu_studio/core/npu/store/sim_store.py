"""Programs and results on disk: loading model.npu.json with one-line
errors, and the workspace's last result next to it.

    npu/model.npu.json   the NpuProgram (docs/npu-ir.schema.json)
    npu/model.sim.json   the last simulation of it (docs/npu-sim-result.schema.json)
"""

from __future__ import annotations

import json
from pathlib import Path

from ...textio import parse_json, read_bytes, without_gc
from ...workspace.confine import write_text_inside
from ...workspace.workspace import Workspace
from ..program.npu_ir import VERSION, NpuProgram
from .all_or_nothing import before_writing
from .workspace_io import npu_dir
from ..sim.plan import SimError
from ..sim.results import SimResult

RESULT_NAME = "model.sim.json"
SCHEMA = Path(__file__).resolve().parents[4] / "docs" / "npu-ir.schema.json"


def result_path(ws: Workspace) -> Path:
    return npu_dir(ws) / RESULT_NAME


def save_result(ws: Workspace, result: SimResult) -> Path:
    """Write the workspace's last result (staged, then renamed into place)."""
    before_writing(ws)
    return write_text_inside(ws.root, result_path(ws), result.to_json())


def load_last_result(ws: Workspace) -> SimResult | None:
    path = result_path(ws)
    return SimResult.load_json(path) if path.exists() else None


def _schema_error(data: dict) -> str | None:
    """First schema violation (jsonschema when installed; the file's own
    structure is checked by NpuProgram.from_dict either way)."""
    try:
        import jsonschema
    except ImportError:
        return None
    if not SCHEMA.exists():
        return None
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
    return f"does not match docs/npu-ir.schema.json at {where}: {err.message}"


@without_gc
def load_program(path: str | Path) -> NpuProgram:
    """Read a model.npu.json; SimError names the file and the reason."""
    path = Path(path)
    data = parse_json(read_bytes(path), path)  # BadFile: unreadable, not UTF-8, not JSON, unbounded
    if not isinstance(data, dict) or data.get("format") != "npu-studio.npu-ir":
        raise SimError(path, "not an NPU IR file (format != npu-studio.npu-ir)")
    if data.get("version") != VERSION:
        raise SimError(path, f"NPU IR version {data.get('version')!r} not supported (want {VERSION})")
    try:
        problem = _schema_error(data)
    except RecursionError:
        problem = "nested too deeply"
    if problem:
        raise SimError(path, problem)
    try:
        program = NpuProgram.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
        raise SimError(path, f"does not match the NPU IR format: {type(e).__name__}: {e}") from None
    return _with_source(program, str(path))


def _with_source(program: NpuProgram, source: str) -> NpuProgram:
    object.__setattr__(program, "source", source)  # frozen; source is not part of equality
    return program
