"""Build `flow`-phase snapshots of ONNX models for the NPU tests.

Cached under /tmp/npu_cache keyed by the model bytes and the compiler
version, so the two shared cores compile each model once.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import onnx

from npu_studio.core.workspace.workspace import Workspace

CACHE = Path(os.environ.get("NPU_CACHE", "/tmp/npu_cache"))
ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def flow_snapshot(model: onnx.ModelProto | str | Path) -> Path:
    """Path of the `flow` snapshot of `model` (an ONNX proto or file)."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    data = model.SerializeToString()
    from npu_studio.core.compile.toolchain import compiler_version

    key = hashlib.sha256(data + b"flow-ws1" + compiler_version().encode()).hexdigest()[:20]
    out = CACHE / f"{key}.flow.mlir"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        # The product's own importer and compiler (weights inline), stopping after flow.
        source = Path(tmp) / "model.onnx"
        onnx.save(model, str(source))
        ws = Workspace.create(source, Path(tmp) / "ws", params=None)
        ws.compile_job(options=ws.compile_options(to_phase="flow")).run()
        os.replace(ws.snapshot_path("flow"), out)
    return out


def zoo_model(name: str) -> Path:
    return ZOO / f"light_{name}.onnx"


ZOO_NAMES = (
    "resnet50", "vgg19", "densenet121", "inception_v1", "inception_v2",
    "shufflenet", "squeezenet", "bvlc_alexnet", "zfnet512",
)

if __name__ == "__main__":
    import sys

    for n in sys.argv[1:] or ZOO_NAMES:
        print(n, flow_snapshot(zoo_model(n)), flush=True)
