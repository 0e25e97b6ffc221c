"""Comparing a quantized model's outputs in quantization steps.

A quantized model's output is an integer tensor (a QuantizeLinear output)
or one dequantized from it (`(q - zero_point) * scale`). Two correct
implementations may round a tie or a value next to one differently, so
the question is not "how far apart" but "how many elements differ, and
by how many steps". The step of an output is 1 for an integer output and
the constant `scale` of the DequantizeLinear that writes a float output;
outputs written by anything else have no step (compared as floats).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Against a reference that quantizes on its own (onnxruntime): at most this
# many steps apart, on at most this fraction of the elements.
MAX_STEPS = 1
MAX_FRACTION = 0.01


@dataclass
class StepComparison:
    reference: str
    elements: int
    differing: int
    max_steps: int
    max_error: float  # the same in the outputs' own units
    scale: float  # largest |reference| value
    tolerance: float = 0.0  # kept for reports that read a Comparison
    tensor: str = ""  # an intermediate tensor compared instead of the outputs (varying_tensor)
    distinct: int = 0  # distinct reference values: 1 means the comparison compares a constant

    @property
    def fraction(self) -> float:
        return self.differing / self.elements if self.elements else 0.0

    @property
    def ok(self) -> bool:
        return self.max_steps <= MAX_STEPS and self.fraction <= MAX_FRACTION

    def line(self) -> str:
        at = f" at {self.tensor}" if self.tensor else ""
        return (f"  vs {self.reference:<12}{at} {self.differing} of {self.elements} elements differ "
                f"({100 * self.fraction:.3f}%), by at most {self.max_steps} quantization step"
                f"{'' if self.max_steps == 1 else 's'} (allowed: {MAX_STEPS} step on "
                f"{100 * MAX_FRACTION:g}%) {'ok' if self.ok else 'DIFFERS'}")

    def to_dict(self) -> dict:
        return {"reference": self.reference, "max_error": self.max_error, "scale": self.scale,
                "tolerance": self.tolerance, "ok": self.ok, "elements": self.elements,
                "differing": self.differing, "max_steps": self.max_steps, "tensor": self.tensor,
                "distinct": self.distinct}


def output_steps(model_path: Path) -> list[float | None]:
    """The quantization step of each graph output of an ONNX model (None: not quantized)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_path), load_external_data=False)
    g = model.graph
    consts = {t.name: t for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant" and node.attribute:
            consts[node.output[0]] = node.attribute[0].t
    producer = {o: n for n in g.node for o in n.output}
    steps: list[float | None] = []
    for out in g.output:
        elem = out.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16,
                    onnx.TensorProto.UINT16):
            steps.append(1.0)
            continue
        node = producer.get(out.name)
        step = None
        if node is not None and node.op_type == "DequantizeLinear" and node.input[1] in consts:
            scale = numpy_helper.to_array(consts[node.input[1]])
            if scale.size == 1:
                step = float(scale.reshape(()))
        steps.append(step)
    return steps


def compare_in_steps(reference: str, ours: list[np.ndarray], ref: list[np.ndarray],
                     steps: list[float]) -> StepComparison:
    elements = differing = max_steps = distinct = 0
    max_err = scale = 0.0
    for a, b, step in zip(ours, ref, steps):
        a64 = np.asarray(a, np.float64)
        b64 = np.asarray(b, np.float64).reshape(a64.shape)
        diff = np.abs(a64 - b64)
        n_steps = np.rint(diff / step).astype(np.int64)
        elements += a64.size
        differing += int(np.count_nonzero(diff))
        max_steps = max(max_steps, int(n_steps.max(initial=0)))
        max_err = max(max_err, float(diff.max(initial=0.0)))
        scale = max(scale, float(np.abs(b64).max(initial=0.0)))
        distinct = max(distinct, len(np.unique(b64)))
    return StepComparison(reference, elements, differing, max_steps, max_err, scale, distinct=distinct)
