"""The dataflow graph on zoo models, against independent truths.

Nodes: the dispatch index's dispatches of the phase (the index is its own code path,
the one the dispatch table shows). Edges: a walk of the flow snapshot's SSA written
here with IREE's MLIR bindings, backwards from each dispatch's tensor operands through
whatever host ops lie between (the product walks forwards, giving values sources).
resnet50 has residual adds, squeezenet and inception_v1 concatenations.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from npu_studio.cli import main as cli_main
from npu_studio.core.graph.build import edited_dispatches, phase_graph
from npu_studio.core.graph.compare import CHANGED, SAME, compare_graphs
from npu_studio.core.ir.dispatch_index import index_workspace_phases
from npu_studio.core.workspace import edit_state
from npu_studio.core.workspace.workspace import Workspace
from tests.zoo_cache import zoo_workspace

SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "graph.schema.json"
MODELS = ["resnet50", pytest.param("squeezenet", marks=pytest.mark.slow),
          pytest.param("inception_v1", marks=pytest.mark.slow)]


def ssa_edges(text: str) -> set[tuple[str, str]]:
    """(source, target) pairs by walking back from every dispatch operand and exported value."""
    from iree.compiler import ir

    ctx = ir.Context()
    ctx.enable_multithreading(False)
    module = ir.Module.parse(text, ctx)
    ops: list = []

    def collect(op):
        ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect, ir.WalkOrder.PRE_ORDER)
    host = [op for op in ops if not _inside_executable(op)]
    ids: dict = {}
    for op in host:
        if op.name == "flow.dispatch":
            ids[op] = f"dispatch:{sum(1 for v in ids.values() if v.startswith('dispatch'))}"
        elif op.name == "hal.tensor.import":
            ids[op] = f"input:{sum(1 for v in ids.values() if v.startswith('input'))}"
        elif op.name == "util.global.load":
            ids[op] = "parameter:" + str(op.attributes["global"]).lstrip("@")

    def sources(value) -> set[str]:
        found, stack, seen = set(), [value], set()
        while stack:
            v = stack.pop()
            owner = v.owner
            if isinstance(owner, ir.Block) or (owner, v.result_number) in seen:
                continue
            seen.add((owner, v.result_number))
            if owner in ids:
                found.add(ids[owner])
                continue
            if owner.name == "hal.tensor.barrier":  # result i is operand i, not their union
                stack.append(owner.operands[v.result_number])
                continue
            stack.extend(x for x in owner.operands if isinstance(x.type, ir.RankedTensorType))
        return found

    edges, outputs = set(), 0
    for op in host:
        if op.name == "flow.dispatch":
            for v in op.operands:
                if isinstance(v.type, ir.RankedTensorType):
                    edges |= {(s, ids[op]) for s in sources(v)}
        elif op.name == "hal.tensor.export":
            edges |= {(s, f"output:{outputs}") for s in sources(op.operands[0])}
            outputs += 1
    return edges


def _inside_executable(op) -> bool:
    p = op.parent
    while p is not None:
        if p.name.endswith(".executable"):
            return True
        p = p.parent
    return False


@pytest.mark.parametrize("name", MODELS)
def test_nodes_are_the_index_and_edges_the_flow_ssa(name):
    ws = zoo_workspace(name)
    snaps = ws.snapshots()
    indexes = index_workspace_phases({p: snaps[p] for p in ("dispatch-creation", "flow", "stream")})
    for phase in ("flow", "stream"):
        graph = phase_graph(ws, phase)
        index = indexes[phase]
        assert [n.dispatch for n in graph.dispatches()] == [r.index for r in index.dispatches]
        # the nodes each computes: of those its locations name (tests/core/graph/test_computed_nodes.py)
        assert all(set(n.onnx_nodes) <= set(r.onnx_nodes) for n, r in zip(graph.dispatches(), index.dispatches))
    truth = ssa_edges(snaps["flow"].read_text())
    assert {(e.source, e.target) for e in graph.edges} == truth
    targets = {}
    for s, t in truth:
        targets.setdefault(t, set()).add(s)
    # resnet50's residual adds and the others' concatenations: a dispatch reading two dispatches
    assert any(len([s for s in srcs if s.startswith("dispatch")]) >= 2 for srcs in targets.values())
    assert any(t.startswith("output:") for t in targets)


def test_cli_writes_json_by_the_schema_dot_others_read_and_svg(tmp_path):
    ws = zoo_workspace("resnet50")
    out = {k: tmp_path / f"g.{k}" for k in ("json", "dot", "svg")}
    for kind, path in out.items():
        assert cli_main(["graph", str(ws.root), f"--{kind}", str(path)]) == 0
    data = json.loads(out["json"].read_text())
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(data)
    import pydot

    (dot,) = pydot.graph_from_dot_data(out["dot"].read_text())
    names = {n.get_name().strip('"') for n in dot.get_nodes()} - {"node", "edge", "graph"}
    assert names == {n["id"] for n in data["nodes"]}
    assert len(dot.get_edges()) == len(data["edges"])
    svg = ET.parse(out["svg"]).getroot()
    groups = [g.get("id") for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("id")]
    assert set(groups) == {n["id"] for n in data["nodes"]}


def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    ws = zoo_workspace("resnet50")
    assert cli_main(["graph", str(ws.root), "--phase", "vm", "--json", str(tmp_path / "g.json")]) == 2
    assert cli_main(["graph", str(ws.root), "--build", "nope", "--json", str(tmp_path / "g.json")]) == 2
    bad = tmp_path / "trace.json"
    bad.write_text("[1, 2")
    assert cli_main(["graph", str(ws.root), "--trace-json", str(bad), "--json", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "Traceback" not in "".join(err)
    assert not (tmp_path / "g.json").exists()


def _single_site_executable_with(text: str, ws: Workspace, needle: str):
    """A dispatch whose executable is called once and holds `needle`: (index, executable text range)."""
    index = index_workspace_phases({"flow": ws.snapshot_path("flow")})["flow"]
    uses: dict = {}
    for r in index.dispatches:
        uses[r.executable] = uses.get(r.executable, 0) + 1
    lines = text.splitlines(keepends=True)
    for r in index.dispatches:
        if uses[r.executable] != 1 or r.text_range is None:
            continue
        start = sum(len(x) for x in lines[:r.text_range.start_line - 1])
        end = sum(len(x) for x in lines[:r.text_range.end_line])
        if needle in text[start:end]:
            return r.index, start, end
    raise AssertionError(f"no single-site executable with {needle}")


def test_a_flow_edit_changes_exactly_the_edited_dispatch(tmp_path):
    shutil.copytree(zoo_workspace("resnet50").root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    text = ws.snapshot_path("flow").read_text()
    edited, start, end = _single_site_executable_with(text, ws, "arith.addf")
    body = text[start:end].replace("arith.addf", "arith.subf", 1)
    edit_state.record_edit(ws, "flow", text[:start] + body + text[end:])
    ws = Workspace.open(ws.root)
    before = phase_graph(ws, flow_text=edit_state.original_path(ws, "flow").read_text())
    after = phase_graph(ws)
    cmp = compare_graphs(before, after)
    assert {d for d, s in cmp.right_status.items() if s != SAME} == {edited}
    assert cmp.right_status[edited] == CHANGED and cmp.counts()["added"] == cmp.counts()["removed"] == 0
    assert edited_dispatches(ws, after) == {edited}
