"""A workspace holding every artifact the app and the CLI write, made once per test run by the CLI itself.

The bundled example compiled, then: an edit of flow resumed, a draft of stream, a substituted
executable, a build variant, compile profiles (passes and executables; a variant's through
`compare --profile`), a break variant (`trace --break`), a precision variant, the NPU program
with its simulation and numerics check, and a run on the NPU plugin. `ARTIFACTS` names one file
of each kind, for tests that damage them one at a time.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from tests.zoo_cache import RUN_DIR_ENV

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "npu_studio" / "_resources" / "examples" / "single_conv.onnx"
EXECUTABLE = "SingleConv$async_dispatch_0"
EDIT_MARK = "// an edit kept by resume"
DRAFT_MARK = "// a draft not compiled yet"

# kind of artifact -> one file of it, relative to the workspace
ARTIFACTS = {
    "edit record": "edits/06.flow.1.mlir",
    "compiler's original of an edited phase": "originals/06.flow.mlir",
    "edited phase snapshot": "phases/06.flow.mlir",
    "draft": "edits/drafts/07.stream.mlir",
    "substitution": f"substitutions/{EXECUTABLE}.source.1.mlir",
    "variant": "variants/v1/phases/06.flow.mlir",
    "compile profile": "profiles/main.json",
    "executable compile times": "profiles/main.executables.json",
    "compare's profile of a variant": "profiles/v1.json",
    "numerics check report": "npu/check/last.json",
    "break variant": "variants/break-0/module.vmfb",
    "precision variant": "variants/demote-contractions-f16/phases/06.flow.mlir",
    "recorded NPU target": "npu/target.toml",
    "recorded NPU target's origin": "npu/target.json",
    "NPU program": "npu/model.npu.json",
    "NPU simulation": "npu/model.sim.json",
    "NPU plugin run": "npu/hal/variant.json",
    "manifest": "manifest.json",
}


def _cli(*args: str, cwd: Path, env: dict) -> None:
    done = subprocess.run([sys.executable, "-m", "npu_studio.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=900)
    assert done.returncode == 0, f"npu-studio {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def build(folder: Path) -> Path:
    """Make the workspace under `folder` with the CLI, as a user would; return its root."""
    ws = folder / "ws"
    env = dict(os.environ, PYTHONPATH=str(REPO), NPU_STUDIO_CONFIG=str(folder / "config"))
    run = lambda *args: _cli(*args, cwd=folder, env=env)  # noqa: E731
    run("compile", str(EXAMPLE), "--workspace", str(ws))
    edited = folder / "flow_edit.mlir"
    edited.write_text(f"{EDIT_MARK}\n" + (ws / "phases" / "06.flow.mlir").read_text())
    run("resume", "--from", "flow", "--workspace", str(ws), str(edited))
    source = folder / "substituted.mlir"
    source.write_text("// substituted\n" + (ws / "executables" / "sources" / f"module_{EXECUTABLE}.mlir").read_text())
    run("substitute", str(ws), "--executable", EXECUTABLE, "--source", str(source), "--repetitions", "0")
    run("variant", str(ws), "create", "v1", "--flags=--iree-opt-level=O3")
    run("variant", str(ws), "build", "v1")
    run("profile", str(ws))
    run("profile", str(ws), "--executables")
    run("compare", str(ws), "main", "v1", "--profile", "--no-run")
    run("trace", str(ws), "--break", "0")
    run("precision", str(ws), "--demote", "contractions-f16")
    run("simulate", str(ws), "--check")
    run("run", str(ws), "--npu")
    # The app's own record of an uncompiled edit (what its window keeps at close).
    (ws / "edits" / "drafts").mkdir(parents=True, exist_ok=True)
    (ws / "edits" / "drafts" / "07.stream.mlir").write_text(f"{DRAFT_MARK}\n" + (ws / "phases" / "07.stream.mlir")
                                                            .read_text())
    missing = [rel for rel in ARTIFACTS.values() if not (ws / rel).is_file()]
    assert not missing, f"the CLI wrote none of {missing}"
    return ws


def full_workspace() -> Path:
    """The workspace, made once per test run (the first worker to ask builds it under a lock)."""
    folder = Path(os.environ[RUN_DIR_ENV]) / "full-workspace"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            build(folder)
            (folder / "done").touch()
    return folder / "ws"


def damage(path: Path, kind: str) -> None:
    """Damage one file as a crash, a bad copy or a stray tool would."""
    import json

    data = path.read_bytes()
    if kind == "truncated":  # a write cut short
        path.write_bytes(data[: len(data) // 2])
    elif kind == "wrong types":  # valid JSON, every value of another type
        obj = json.loads(data)
        obj = {k: ("x" if isinstance(v, list) else [1]) for k, v in obj.items()} if isinstance(obj, dict) else {"x": 1}
        path.write_text(json.dumps(obj))
    elif kind == "a folder":  # a folder where the file should be
        path.unlink()
        path.mkdir()
        (path / "stray").write_text("x")
    elif kind == "binary garbage":
        path.write_bytes(bytes(range(256)) * 4 + b"\xff\xfe\x00")
    else:
        raise ValueError(kind)
