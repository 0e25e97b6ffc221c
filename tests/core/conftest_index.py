"""Helpers for the dispatch-index tests: prepare ONNX models, compile, cache.

Not a conftest: test modules import the fixture `compiled` from here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import onnx
import pytest

from tests.zoo_cache import zoo_workspace
from onnx import version_converter

from iree.compiler import ir
from iree.compiler.extras import onnx_importer
from iree.compiler.tools.binaries import find_tool

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "resources" / "examples" / "single_conv.onnx"
ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def prepare(model: onnx.ModelProto) -> onnx.ModelProto:
    """Opset >= 17, shapes inferred, every node named (as the importer sees it)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    if opset < 17:
        model = version_converter.convert_version(model, 17)
    model = onnx.shape_inference.infer_shapes(model)
    for i, n in enumerate(model.graph.node):
        if not n.name:
            n.name = f"{n.op_type}_{i}"
    return model


def compile_phases(model: onnx.ModelProto, out: Path) -> Path:
    """Import with debug locations and compile for llvm-cpu, dumping every phase."""
    out.mkdir(parents=True, exist_ok=True)
    ctx = ir.Context()
    info = onnx_importer.ModelInfo(model)
    module = info.create_module(context=ctx).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    src = out / "in.mlir"
    src.write_text(module.get_asm(enable_debug_info=True))
    subprocess.run(
        [
            find_tool("iree-compile"), str(src),
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=host",
            f"--dump-compilation-phases-to={out / 'phases'}",
            "--mlir-print-debuginfo",
            "-o", str(out / "out.vmfb"),
        ],
        check=True,
        capture_output=True,
    )
    return out / "phases"


def phase_file(phases: Path, phase: str) -> Path:
    """`module.N.<phase>.mlir` of a dump, or `NN.<phase>.mlir` of a workspace."""
    (path,) = phases.glob(f"*.{phase}.mlir")
    return path


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """compiled(name, model) -> phases dir; each model compiled once per session."""
    cache: dict[str, Path] = {}
    root = tmp_path_factory.mktemp("idx")

    def get(name: str, model: onnx.ModelProto) -> Path:
        if name not in cache:
            if (ZOO / f"light_{name}.onnx").exists():  # the run's shared compile of the zoo model
                cache[name] = zoo_workspace(name).root / "phases"
            else:
                cache[name] = compile_phases(model, root / name)
        return cache[name]

    return get
