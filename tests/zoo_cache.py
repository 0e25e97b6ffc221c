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
    return cached_workspace(name, lambda folder: zoo_model(name), group="zoo")


def zoo_flow(name: str) -> Path:
    return zoo_workspace(name).snapshot_path("flow")


def quantize_qdq(model_in: Path, model_out: Path, activation: str = "i8", batches: int = 4,
                 seed: int = 0) -> Path:
    """onnxruntime's static QDQ quantization of a model: per-channel int8 weights,
    int8 (activation "i8") or uint8 ("u8") activations, calibrated on `batches`
    seeded random batches of its first input."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    model = onnx.load(str(model_in))
    model.ir_version = 10  # onnxruntime rejects 14; old zoo files (3) list weights as inputs
    f32 = model_out.with_name(model_out.stem + "_f32.onnx")
    onnx.save(model, str(f32))
    weights = {t.name for t in model.graph.initializer}
    first = next(i for i in model.graph.input if i.name not in weights)
    shape = [d.dim_value or 1 for d in first.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    feeds = [{first.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(batches)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self._it = iter(feeds)

        def get_next(self):
            return next(self._it, None)

    quantize_static(str(f32), str(model_out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8 if activation == "i8" else QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    return model_out


def quant_zoo_workspace(name: str, activation: str = "i8"):
    """The product's compile of light_<name>.onnx quantized in the test run (QDQ), made once per run."""
    return cached_workspace(f"{name}_{activation}", lambda folder: quantize_qdq(
        zoo_model(name), folder / f"{name}_{activation}.onnx", activation))


def cached_workspace(key: str, make_model, group: str = "zoo-qdq"):
    """A compiled workspace of the model `make_model(folder)` gives, made once per run: the first worker to
    ask compiles under a lock (`fcntl.flock`), the others wait and reuse it."""
    from npu_studio.core.workspace.workspace import Workspace, compile_model

    run_dir = Path(os.environ[RUN_DIR_ENV])  # set by tests/conftest.py
    folder = run_dir / group / key
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "done"
        if done.exists():
            return Workspace.open(folder / "ws")
        ws = compile_model(make_model(folder), folder / "ws")
        done.touch()
        return ws
