"""Light-zoo models compiled once per test run, shared by every test and xdist worker.

Three test modules need the zoo's flow snapshots (dispatch index, NPU
pipeline, compile); compiling each model once for all of them keeps
`make test` within its budget. The first worker to ask compiles under a
lock (`fcntl.flock`); the other waits and reuses the workspace.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import onnx

ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
RUN_DIR_ENV = "NPU_STUDIO_TEST_RUN_DIR"


def zoo_model(name: str) -> Path:
    return ZOO / f"light_{name}.onnx"


def zoo_workspace(name: str):
    """The product's own compile of light_<name>.onnx (every phase), made once per run."""
    from npu_studio.core.workspace.workspace import Workspace, compile_model

    run_dir = Path(os.environ[RUN_DIR_ENV])  # set by tests/conftest.py
    folder = run_dir / "zoo" / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "done"
        if done.exists():
            return Workspace.open(folder / "ws")
        ws = compile_model(zoo_model(name), folder / "ws")
        done.touch()
        return ws


def zoo_flow(name: str) -> Path:
    return zoo_workspace(name).snapshot_path("flow")
