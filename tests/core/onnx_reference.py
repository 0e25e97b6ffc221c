"""onnxruntime as the numerical reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def run_onnxruntime(model_path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(model_path))
    model.ir_version = min(model.ir_version, 10)  # onnxruntime 1.31 rejects IR version 14
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)
