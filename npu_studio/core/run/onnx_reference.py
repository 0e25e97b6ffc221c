"""onnxruntime as the reference: a model's outputs, and its intermediate tensors.

onnxruntime returns only graph outputs, so `run_with_intermediates` runs a
copy of the graph with the wanted tensors added as outputs (the model on
disk is never touched). The IR version is lowered to 10, which onnxruntime
accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import StudioError


def _model(path: Path):
    import onnx

    try:
        m = onnx.load(str(path))
    except Exception as exc:  # onnx's own parse errors (DecodeError, ...)
        raise StudioError(path, f"cannot read the ONNX model: {' '.join(str(exc).split())[:200]}") from None
    m.ir_version = min(m.ir_version, 10)
    return m


def imported_model(source: Path):
    """The ONNX model as the importer saw it: opset upgraded, unnamed nodes named.

    Its node names are the ones in the MLIR locations (the dispatch index's
    ONNX provenance), so its tensors can be paired with dispatches.
    Raises ImportFailed (a StudioError naming `source`) as the import would.
    """
    from ..compile.importer import load_onnx, name_unnamed_nodes, upgrade_opset

    model = upgrade_opset(load_onnx(Path(source)), Path(source))
    name_unnamed_nodes(model)
    model.ir_version = min(model.ir_version, 10)
    return model


def _session(model):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initializers are not the user's business
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs for the model file `model` on `inputs` (in the graph's input order)."""
    sess = _session(_model(model))
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feeds)


def run_with_intermediates(model, inputs: list[np.ndarray], tensors: Sequence[str],
                           source: Path | None = None) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """The outputs of `model` (a ModelProto, left unchanged), and the value of every tensor named in `tensors`.

    Raises StudioError naming `source` when onnxruntime cannot load or run it.
    """
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    outputs = [o.name for o in m.graph.output]
    extra = [t for t in dict.fromkeys(tensors) if t not in outputs]
    # Added outputs carry no type: onnxruntime infers it from the producing node.
    m.graph.output.extend([onnx.ValueInfoProto(name=t) for t in extra])
    try:
        sess = _session(m)
        feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
        values = sess.run(None, feeds)
    except ImportError:
        raise StudioError(source, "onnxruntime is not installed; it is the reference of the trace") from None
    except Exception as exc:  # onnxruntime's own errors (unsupported op, bad feed, ...)
        raise StudioError(source, f"onnxruntime cannot run the model: {' '.join(str(exc).split())[:200]}") from None
    named = dict(zip(outputs + extra, values))
    return values[:len(outputs)], {t: named[t] for t in tensors if t in named}
