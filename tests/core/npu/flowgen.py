"""Build `flow`-phase snapshots of ONNX models for the NPU tests.

Cached under /tmp/npu_cache keyed by the model bytes and the compiler
version, so the two shared cores compile each model once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import onnx

CACHE = Path(os.environ.get("NPU_CACHE", "/tmp/npu_cache"))
ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _iree_compile() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


def _prepare(model: onnx.ModelProto) -> onnx.ModelProto:
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=17)
    if opset < 17:
        model = onnx.version_converter.convert_version(model, 17)
    model = onnx.shape_inference.infer_shapes(model)
    for i, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}_{i}"
    return model


def import_onnx(model: onnx.ModelProto) -> str:
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer

    ctx = ir.Context()
    info = onnx_importer.ModelInfo(model)
    mod = info.create_module(context=ctx).operation
    imp = onnx_importer.NodeImporter.define_function(info.main_graph, mod)
    imp.import_all()
    return mod.get_asm(enable_debug_info=True)


def flow_snapshot(model: onnx.ModelProto | str | Path) -> Path:
    """Path of the `flow` snapshot of `model` (an ONNX proto or file)."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    data = model.SerializeToString()
    from npu_studio.core.toolchain import compiler_version

    key = hashlib.sha256(data + b"flow-v1" + compiler_version().encode()).hexdigest()[:20]
    out = CACHE / f"{key}.flow.mlir"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    src = CACHE / f"{key}.input.mlir"
    src.write_text(import_onnx(_prepare(model)))
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    subprocess.run(
        [
            _iree_compile(), str(src),
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=host",
            "--compile-to=flow", "--mlir-print-debuginfo",
            "-o", str(tmp),
        ],
        check=True, capture_output=True, text=True,
    )
    tmp.replace(out)
    src.unlink()
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
