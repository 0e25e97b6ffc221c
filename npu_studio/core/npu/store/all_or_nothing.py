"""A command's NPU results are kept only if the whole command succeeds.

`simulate --check`, `run --npu` and `asm` plan a workspace (writing npu/ and the manifest's
backend) before the backend's emitter and runner are asked for anything; `run --npu` must, since
IREE's runtime loads the program from disk. Inside `with all_or_nothing():` the first write to a
workspace's NPU results keeps what they were; if the block raises, they are put back, so a
backend whose emitter or runner fails leaves the previous good state: the files as they were,
missing ones missing, and the manifest naming the backend it named before. Caches keyed by
content (npu/check, the NPU build variant) stay, since they describe no state.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...textio import write_bytes_atomic
from ...workspace.confine import remove_inside
from ...workspace.workspace import Workspace

# The files of npu/ that hold the workspace's NPU state (workspace_io, target_store, sim_store).
STATE_FILES = ("model.npu.json", "model.npu.mlir", "target.toml", "target.json", "model.sim.json")
_open = threading.local()


@dataclass
class _Kept:
    ws: Workspace
    files: dict[str, bytes | None]  # name in npu/ -> its bytes (None: it did not exist)
    backend: str  # the manifest's npu_backend

    def put_back(self) -> None:
        folder = self.ws.root / "npu"
        for name, data in self.files.items():
            path = folder / name
            if data is None:
                if path.is_file():
                    remove_inside(self.ws.root, Path("npu") / name)
            elif _bytes(path) != data:
                write_bytes_atomic(path, data)
        ws = Workspace.open(self.ws.root)  # the manifest as it is now: other writers' changes stay
        if ws.manifest.npu_backend != self.backend:
            ws.manifest.npu_backend = self.backend
            ws.save()


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def before_writing(ws: Workspace) -> None:
    """Called by every writer of a workspace's NPU state: keeps what it was, once per block."""
    kept = getattr(_open, "stack", None)
    if not kept:
        return
    block = kept[-1]
    if any(k.ws.root == ws.root for k in block):
        return
    folder = ws.root / "npu"
    block.append(_Kept(ws, {name: _bytes(folder / name) for name in STATE_FILES}, ws.manifest.npu_backend))


@contextmanager
def all_or_nothing():
    """NPU results written to any workspace inside the block are put back as they were if it raises."""
    stack = _open.__dict__.setdefault("stack", [])
    stack.append([])
    try:
        yield
    except BaseException:
        for kept in reversed(stack[-1]):
            try:
                kept.put_back()
            except Exception:  # noqa: BLE001 - the block's own failure is the one to report
                pass
        raise
    finally:
        stack.pop()
