"""Helpers for the dispatch-index tests: prepare ONNX models, compile, cache.

Not a conftest: test modules import the fixture `compiled` from here.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import version_converter

from npu_studio.core.workspace.workspace import compile_model
from tests.zoo_cache import zoo_workspace

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
    """Import and compile for llvm-cpu with the product's own importer and compiler (weights
    inline), keeping every phase; returns the folder of the phase snapshots."""
    out.mkdir(parents=True, exist_ok=True)
    source = out / "model.onnx"
    onnx.save(model, str(source))
    return compile_model(source, out / "ws", params=None).root / "phases"


def phase_file(phases: Path, phase: str) -> Path:
    """`NN.<phase>.mlir` of a workspace."""
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
