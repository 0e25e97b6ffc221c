"""Building the dataflow graph of a build's phase: the dispatch index's nodes, the flow IR's edges.

Nodes are the phase's dispatches as the dispatch index has them (linked to the
flow phase's numbering, `link_phase_indexes`), plus the model's inputs, outputs
and parameters. Edges come from the flow snapshot's SSA dataflow (dataflow.py):
the phase where the host program still passes tensors between dispatch sites. A
later phase's dispatch keeps its flow number, so its edges are flow's; a dispatch
of that phase that cannot be linked to flow has no edges (a note says so).
A dispatch lists the ONNX nodes it computes (run/computed_nodes: not every node
its locations name), and the outputs are named by the model's graph outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import StudioError
from ..ir.dispatch_index import PhaseIndex, index_text, index_workspace_phases, link_phase_indexes
from ..textio import read_text
from ..units import plural
from ..workspace import edit_state, substitutions, variants
from ..workspace.workspace import Workspace
from . import overlays
from .compare import SAME, compare_graphs
from .dataflow import DISPATCH, INPUT, OUTPUT, PARAMETER, HostDataflow, dataflow_of_text, node_id
from .model import DataflowGraph, GraphEdge, GraphNode

FLOW = "flow"
NO_DISPATCHES = ("input", "abi", "preprocessing", "global-optimization", "vm")


def graph_from(dataflow: HostDataflow, index: PhaseIndex, build: str = variants.MAIN,
               onnx: OnnxOfBuild | None = None) -> DataflowGraph:
    """The graph of `index`'s phase with `dataflow`'s edges (both of one build; index linked to flow).
    `onnx`: what the ONNX model says (each dispatch's computed nodes, the outputs' names); without it the
    dispatches list every node their locations name and the outputs are numbered."""
    nodes: list[GraphNode] = []
    for k, (label, tensor) in enumerate(dataflow.inputs):
        nodes.append(GraphNode(node_id(INPUT, k), INPUT, label, outputs=[tensor]))
    for symbol, tensor in dataflow.parameters.items():
        nodes.append(GraphNode(node_id(PARAMETER, symbol), PARAMETER, symbol, outputs=[tensor]))
    unlinked = 0
    for rec in index.dispatches:
        linked = rec.index < dataflow.sites
        unlinked += not linked
        symbol = f"@{rec.executable}::@{rec.export}" if rec.export else f"@{rec.executable or '?'}"
        nodes.append(GraphNode(
            node_id(DISPATCH, rec.index), DISPATCH, f"#{rec.index} {rec.kind or 'dispatch'}", rec.index,
            rec.kind, symbol, list(dataflow.results[rec.index]) if linked else [],
            onnx.computed.get(rec.index, []) if onnx is not None else list(rec.onnx_nodes),
            dataflow.signatures[rec.index] if linked else ""))
    names = onnx.outputs if onnx is not None and len(onnx.outputs) == len(dataflow.outputs) else []
    for k, (label, tensor) in enumerate(dataflow.outputs):
        label = names[k] if names else label
        nodes.append(GraphNode(node_id(OUTPUT, k), OUTPUT, label, outputs=[tensor]))
    present = {n.id for n in nodes}
    edges = [GraphEdge(f.source, f.target, f.tensor) for f in dataflow.flows
             if f.source in present and f.target in present]
    graph = DataflowGraph(index.phase, build, nodes, edges)
    if unlinked:
        graph.notes.append(f"{plural(unlinked, 'dispatch')} of {index.phase} {'has' if unlinked == 1 else 'have'} "
                           "no flow dispatch: shown without edges")
    if onnx is not None and onnx.note:
        graph.notes.append(onnx.note)
    return graph


@dataclass
class OnnxOfBuild:
    computed: dict[int, list[str]]  # dispatch -> the ONNX nodes it computes (run/computed_nodes)
    outputs: list[str]  # the model's output names, in order
    note: str = ""


def onnx_of(ws: Workspace, flow_index: PhaseIndex) -> OnnxOfBuild:
    """What the workspace's ONNX model says of the flow dispatches (a model that cannot be read: the names
    the locations give, and a note saying why)."""
    from ..run.computed_nodes import computed_nodes
    from ..run.onnx_graph import OnnxGraphOrder
    from ..run.onnx_reference import imported_model

    try:
        model = imported_model(ws.source_path)
    except (StudioError, OSError) as exc:
        return OnnxOfBuild({r.index: list(r.onnx_nodes) for r in flow_index.dispatches}, [],
                           f"ONNX nodes as the locations name them (the model cannot be read: {exc})")
    return OnnxOfBuild(computed_nodes(flow_index.dispatches, OnnxGraphOrder(model)),
                       [o.name for o in model.graph.output])


def _build(ws: Workspace, name: str):
    try:
        return variants.resolve(ws, name)
    except StudioError:
        raise
    except Exception as exc:  # a manifest entry of the wrong shape
        raise StudioError(ws.root, f"build {name!r}: {exc}") from None


def phase_graph(ws: Workspace, phase: str = FLOW, build: str = variants.MAIN,
                flow_text: str | None = None) -> DataflowGraph:
    """The graph of `build`'s `phase`, without overlays. `flow_text`: flow text to use in place of the
    build's snapshot (the compiler's original, to compare an edit with)."""
    if phase in NO_DISPATCHES:
        raise StudioError(None, f"the {phase} phase has no dispatches (dispatch-creation to hal have)")
    b = _build(ws, build)
    snaps = b.snapshots()
    for needed in {FLOW, phase}:
        if needed not in snaps:
            raise StudioError(ws.root, f"build {build!r} has no {needed} snapshot; compile it first")
    paths = {p: snaps[p] for p in ("dispatch-creation", FLOW, phase) if p in snaps}
    indexes = index_workspace_phases(paths)  # SnapshotParseError names file:line:col
    own = read_text(snaps[FLOW])
    text = own if flow_text is None else flow_text
    if text != own:  # another flow text: its own index, linked again (dispatch-creation names sites)
        indexes[FLOW] = index_text(text, FLOW)
        link_phase_indexes(indexes)
    return graph_from(dataflow_of_text(text, snaps[FLOW]), indexes[phase], build, onnx_of(ws, indexes[FLOW]))


def edited_dispatches(ws: Workspace, graph: DataflowGraph) -> set[int]:
    """The dispatches of `graph` (the main build) that differ from the compiler's own flow text."""
    original = edit_state.original_path(ws, FLOW)
    if graph.build != variants.MAIN or not original.is_file():
        return set()
    before = phase_graph(ws, FLOW, variants.MAIN, flow_text=read_text(original))
    after = graph if graph.phase == FLOW else phase_graph(ws, FLOW, variants.MAIN)
    cmp = compare_graphs(before, after)
    return {d for d, s in cmp.right_status.items() if s != SAME}


def workspace_graph(ws: Workspace, phase: str = FLOW, build: str = variants.MAIN, *,
                    trace: dict | None = None, measured: list[dict] | None = None, sim=None) -> DataflowGraph:
    """The graph with every overlay the workspace (and the given trace and measured run) can fill.
    `sim`: a SimResult of the workspace's NPU program to use in place of the saved one (the app's own
    simulation, which it does not save)."""
    from ..npu.store.sim_store import load_last_result
    from ..npu.store.workspace_io import json_path
    from ..npu.program.npu_ir import NpuProgram

    graph = phase_graph(ws, phase, build)
    if build == variants.MAIN and json_path(ws).is_file():
        sim = sim if sim is not None else load_last_result(ws)  # SimResultError names the file
        overlays.add_npu(graph, NpuProgram.load(json_path(ws)), sim)
    elif build == variants.MAIN:
        graph.notes.append("no NPU program yet: run the NPU pipeline for units, cycles and SRAM")
    else:
        graph.notes.append(f"NPU overlays are the main build's; {build!r} is a variant")
    if trace is not None:
        overlays.add_trace(graph, trace)
    if measured is not None:
        overlays.add_measured(graph, measured)
    subs = {s.name: s.describe() for s in substitutions.applied(ws)} if build == variants.MAIN else {}
    overlays.add_edits(graph, subs, edited_dispatches(ws, graph))
    return graph


def read_json_file(path: Path, what: str):
    """A trace or measured run given on the command line; BadFile/StudioError name the file."""
    from ..textio import parse_json, read_bytes

    data = parse_json(read_bytes(path), path)
    if what == "trace" and not (isinstance(data, dict) and isinstance(data.get("dispatches"), list)):
        raise StudioError(path, "not a numerics trace (expected `npu-studio trace --json` output)")
    if what == "measured" and not (isinstance(data, list) and all(isinstance(r, dict) for r in data)):
        raise StudioError(path, "not a measured run (expected `npu-studio measure --json` output)")
    return data



ORIGINAL, PREVIOUS = "original", "previous"


def comparable(ws: Workspace) -> list[tuple[str, str]]:
    """(label, key) of what the main build can be set beside: built variants, the compiler's own flow
    of an edited flow, the flow a resume replaced."""
    out = [(f"variant {v.name}", f"build:{v.name}") for v in variants.variants(ws) if v.build is not None]
    if edit_state.original_path(ws, FLOW).is_file():
        out.append(("flow before the edit", ORIGINAL))
    if edit_state.previous_build_path(ws, FLOW).is_file():
        out.append(("flow before the last resume", PREVIOUS))
    return out


def graph_for(ws: Workspace, key: str, phase: str = FLOW) -> DataflowGraph:
    """The graph `comparable` names by `key` (a variant's phase; the flow texts of the main build)."""
    if key.startswith("build:"):
        return phase_graph(ws, phase, key.removeprefix("build:"))
    path = edit_state.original_path(ws, FLOW) if key == ORIGINAL else edit_state.previous_build_path(ws, FLOW)
    graph = phase_graph(ws, FLOW, variants.MAIN, flow_text=read_text(path))
    graph.build = "before the edit" if key == ORIGINAL else "before the resume"
    return graph
