"""Comparing a quantized model with onnxruntime where its values vary.

A quantized classifier's outputs are often constant on the inputs at
hand: every requantized probability rounds to the same step (and the
onnx package's light zoo models, with their constant weights, make every
logit equal whatever the input). Comparing constants says nothing about
the arithmetic. The check then compares the last quantized (8-bit
integer) tensor that varies: the last one in the ONNX graph's order whose
onnxruntime value has two distinct elements or more, against the
simulation's result of the dispatch that computes it (`run.onnx_pairing`).
"""

from __future__ import annotations

import numpy as np

from ...ir.dispatch_index import index_workspace_phases
from ...run.flow_pairing import FlowPairing
from ...run.onnx_reference import imported_model, run_with_intermediates
from ...workspace.workspace import Workspace
from .quant_steps import StepComparison, compare_in_steps


def constant(arrays: list[np.ndarray]) -> bool:
    """Does every array hold one value only?"""
    return all(np.asarray(a).size == 0 or bool(np.all(np.asarray(a) == np.asarray(a).flat[0])) for a in arrays)


def quantized_result(results: list[np.ndarray]) -> bool:
    """A dispatch result worth keeping for the comparison: 8-bit integers."""
    return bool(results) and all(np.asarray(r).dtype in (np.int8, np.uint8) for r in results)


def compare_last_varying(ws: Workspace, inputs: list[np.ndarray],
                         results: dict[int, list[np.ndarray]]) -> StepComparison | None:
    """Our `results` (dispatch -> its 8-bit results) against onnxruntime at the last varying
    quantized tensor; None when no quantized tensor paired with a dispatch varies."""
    model = imported_model(ws.source_path)
    phases = {p: ws.snapshot_path(p) for p in ("dispatch-creation", "flow") if p in ws.manifest.phases}
    index = index_workspace_phases(phases)["flow"]
    pairing = FlowPairing(ws.snapshot_path("flow"), index, model)
    _, reference = run_with_intermediates(model, inputs, pairing.wanted(), ws.source_path)
    reference = {**dict(zip(pairing.graph.graph_inputs, inputs)), **reference}
    pairing.set_reference(reference)
    best = None  # (graph position, tensor, ours, reference)
    for rec in index.dispatches:  # in execution order: a dispatch that moves data is paired through its input
        arrays = results.get(rec.index)
        pairings = pairing.pair(rec.index, arrays)
        if arrays is None:
            continue
        for ours, p in zip(arrays, pairings):
            if p.tensor is None:
                continue
            mine, ref = p.view(np.asarray(ours), np.asarray(reference[p.tensor]))
            if ref.dtype.kind not in "iu" or constant([ref]):
                continue
            position = pairing.graph.order.get(p.node, -1)
            if best is None or position > best[0]:
                best = (position, p.tensor, mine, ref)
    if best is None:
        return None
    _, tensor, mine, ref = best
    comparison = compare_in_steps("onnxruntime", [mine], [ref], [1.0])
    comparison.tensor = tensor
    return comparison
