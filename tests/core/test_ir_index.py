"""Acceptance tests of the dispatch index on real IREE compiles."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import onnx
import pytest
from iree.compiler import ir
from onnx import TensorProto, helper

from npu_studio.core.compile.phases import SNAPSHOT_PHASES
from npu_studio.core.ir.dispatch_index import (
    index_file,
    index_workspace_phases,
    link_phase_indexes,
    onnx_names,
)
from npu_studio.core.ir.dispatch_report import format_dispatches, to_json
from npu_studio.core.ir.mlir_text import SnapshotParseError

from .conftest_index import EXAMPLE, ZOO, compiled, phase_file, prepare  # noqa: F401

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "dispatch-index.schema.json"


def _flow_dispatch_ops(path: Path) -> int:
    """IREE's own count: flow.dispatch ops in the flow snapshot."""
    module = ir.Module.parse(path.read_text(), ir.Context())
    n = 0

    def cb(op):
        nonlocal n
        n += op.name == "flow.dispatch"
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb)
    return n


def _names_on_ops(path: Path) -> set[str]:
    """Every ONNX name that the location of some op in the snapshot mentions.

    Block-argument locations are not included: they name the node that
    produced the value, not an op of the snapshot.
    """
    module = ir.Module.parse(path.read_text(), ir.Context())
    names: list[str] = []
    seen: set[str] = set()

    def cb(op):
        onnx_names(op.location, names, seen)
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb)
    return seen


def _cse_duplicates(model: onnx.ModelProto) -> dict[str, str]:
    """Node -> an earlier node that computes the same value (the first one).

    Value numbering as MLIR's CSE sees the graph: constants (initializers,
    Constant) by value, graph inputs by name, a node by op type, attributes
    and the numbers of its inputs. The light zoo's weights are splats, so
    e.g. inception's "3x3_reduce" and "double3x3_reduce" 1x1 convs on the
    same input are one computation, and so is what follows them up to the
    first op whose weights differ.
    """
    numbers: dict[object, int] = {}

    def number(key) -> int:
        return numbers.setdefault(key, len(numbers))

    value: dict[str, int] = {}
    for init in model.graph.initializer:
        a = onnx.numpy_helper.to_array(init)
        value[init.name] = number(("const", str(a.dtype), a.shape, a.tobytes()))
    for inp in model.graph.input:
        value.setdefault(inp.name, number(("input", inp.name)))
    first: dict[int, str] = {}
    out: dict[str, str] = {}
    for n in model.graph.node:
        if n.op_type == "Constant":
            a = onnx.numpy_helper.to_array(n.attribute[0].t)
            ids = [number(("const", str(a.dtype), a.shape, a.tobytes()))]
        else:
            attrs = tuple(sorted((a.name, a.SerializeToString()) for a in n.attribute))
            ins = tuple(value[i] if i else None for i in n.input)
            node = number((n.domain, n.op_type, attrs, ins))
            ids = [number(("out", node, k)) for k in range(len(n.output))]
            if node in first:
                out[n.name] = first[node]
            else:
                first[node] = n.name
        for name, i in zip(n.output, ids):
            value[name] = i
    return out


def _expected_convs(model: onnx.ModelProto) -> dict[str, dict]:
    shapes = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    out = {}
    for n in model.graph.node:
        if n.op_type != "Conv":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        x, w, y = shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]]
        group = attrs.get("group", 1)
        out[n.name] = {
            "C": x[1], "F": w[0], "KH": w[2], "KW": w[3], "OH": y[2], "OW": y[3],
            "strides": tuple(attrs.get("strides", [1, 1])),
            "dilations": tuple(attrs.get("dilations", [1, 1])),
            "groups": group,
        }
    return out


def _mismatch(rec, exp) -> str | None:
    d = rec.root
    dims = d.dims
    groups = d.groups or 1
    got = {"C": dims.get("C"), "F": dims.get("F"), "groups": groups}
    want = {"C": exp["C"], "F": exp["F"], "groups": exp["groups"]}
    if "OH" in dims:
        got.update(KH=dims["KH"], KW=dims["KW"], OH=dims["OH"], OW=dims["OW"],
                   strides=d.strides, dilations=d.dilations)
        want.update(KH=exp["KH"], KW=exp["KW"], OH=exp["OH"], OW=exp["OW"],
                    strides=exp["strides"], dilations=exp["dilations"])
    else:
        # IREE collapsed a 1x1 conv's image into one loop: OW = OH*OW
        got.update(K=dims["KW"], O=dims["OW"], strides=d.strides)
        want.update(K=exp["KH"] * exp["KW"], O=exp["OH"] * exp["OW"], strides=(1,))
        if exp["strides"] != (1, 1):
            return f"collapsed image but ONNX strides {exp['strides']}"
    if d.kind == "depthwise_conv" and exp["groups"] != exp["C"]:
        return f"depthwise but ONNX group {exp['groups']} != C {exp['C']}"
    return None if got == want else f"got {got}, want {want}"


def _check_model(name: str, model: onnx.ModelProto, compiled) -> None:
    model = prepare(model)
    phases = compiled(name, model)
    flow = phase_file(phases, "flow")
    index = index_file(flow, "flow")
    assert index.num_dispatch_sites == _flow_dispatch_ops(flow) == len(index.dispatches)
    assert [r.index for r in index.dispatches] == list(range(len(index.dispatches)))
    expected = _expected_convs(model)
    assert expected
    problems = []
    matched: set[str] = set()
    unnamed: list[str] = []
    for node, exp in expected.items():
        recs = [r for r in index.dispatches if node in r.onnx_nodes and r.root is not None
                and r.root.kind in ("conv", "depthwise_conv")]
        if not recs:
            unnamed.append(node)
            continue
        errors = [_mismatch(r, exp) for r in recs]
        if all(errors):
            problems.append(f"{node}: {errors[0]}")
        else:
            matched.add(node)
    # The one accepted case of a Conv that no dispatch names: IREE's CSE
    # merged it into an identical earlier Conv (same input, attributes and
    # weights by value) that is matched above, and dropped its location, so
    # no op of the flow snapshot mentions it: the index cannot know it.
    duplicates = _cse_duplicates(model) if unnamed else {}
    on_ops = _names_on_ops(flow) if unnamed else set()
    for node in unnamed:
        twin = duplicates.get(node)
        if twin in matched and node not in on_ops:
            continue
        kinds = [r.root and r.root.kind for r in index.dispatches if node in r.onnx_nodes]
        why = (f"CSE duplicate of {twin}" if twin else "not a CSE duplicate") + (
            ", named by an op of the flow snapshot" if node in on_ops else "")
        problems.append(f"{node}: no conv dispatch (dispatches naming it: {kinds}; {why})")
    assert not problems, "\n".join(problems)


def test_example_conv(compiled):
    _check_model("example", onnx.load(EXAMPLE), compiled)


def test_resnet50(compiled):
    _check_model("resnet50", onnx.load(ZOO / "light_resnet50.onnx"), compiled)


@pytest.mark.slow
@pytest.mark.parametrize(
    "zoo",
    ["vgg19", "densenet121", "inception_v1", "inception_v2", "shufflenet",
     "squeezenet", "bvlc_alexnet", "zfnet512"],
)
def test_zoo(zoo, compiled):
    _check_model(zoo, onnx.load(ZOO / f"light_{zoo}.onnx"), compiled)


def _twin_conv_model() -> onnx.ModelProto:
    """Convs A and B compute the same value (same input, same splat weights); C differs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 14, 14])
    inits = [
        helper.make_tensor(name, TensorProto.FLOAT, [4, 8, 3, 3], [v] * (4 * 8 * 9))
        for name, v in (("wa", 0.02), ("wb", 0.02), ("wc", 0.03))
    ]
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], name="A"),
        helper.make_node("Conv", ["x", "wb"], ["b"], name="B"),
        helper.make_node("Conv", ["x", "wc"], ["c"], name="C"),
        helper.make_node("Mul", ["a", "b"], ["ab"], name="AB"),
        helper.make_node("Add", ["ab", "c"], ["y"], name="Y"),
    ]
    graph = helper.make_graph(nodes, "twins", [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_cse_merged_conv_is_the_one_accepted_unnamed_conv(compiled):
    model = prepare(_twin_conv_model())
    assert _cse_duplicates(model) == {"B": "A"}
    flow = phase_file(compiled("twins", model), "flow")
    named = {n for r in index_file(flow, "flow").dispatches for n in r.onnx_nodes}
    # IREE computes A once for both and keeps only A's location
    assert {"A", "C"} <= named and "B" not in named
    assert "B" not in _names_on_ops(flow) and {"A", "C"} <= _names_on_ops(flow)
    _check_model("twins", model, compiled)
    # a differing conv is not a duplicate, so the rule would not cover it
    model.graph.initializer[1].float_data[0] = 0.5
    assert _cse_duplicates(model) == {}


def test_example_report_and_text_range(compiled):
    phases = compiled("example", prepare(onnx.load(EXAMPLE)))
    flow = phase_file(phases, "flow")
    index = index_file(flow, "flow")
    (rec,) = index.dispatches
    assert rec.onnx_nodes == ["Conv_0"]
    assert rec.root_onnx_nodes == ["Conv_0"]
    assert rec.executable.endswith("_dispatch_0")
    assert rec.export.endswith("_conv_8x498x498x3x3x3_f32")
    assert format_dispatches(index) == (
        "Dispatch #0: conv  (ONNX: Conv_0)\n"
        "  op: linalg.generic (conv, fused: bias add)\n"
        "  N=1 C=3 H=500 W=500 F=8 KH=3 KW=3 OH=498 OW=498 stride=1,1 dilation=1,1\n"
        "  dtype: f32\n"
    )
    text = flow.read_text()
    body = rec.text_range.slice(text)
    assert body.startswith("flow.executable")
    assert body.endswith("}")
    assert body.count("{") == body.count("}")
    (site,) = rec.call_sites
    assert site.slice(text).startswith("flow.dispatch @")
    names: list[str] = []
    ir.Module.parse(text, ir.Context()).operation.walk(
        lambda op: (names.append(op.name.split(".")[0]), ir.WalkResult.ADVANCE)[1]
    )
    assert index.op_counts_by_dialect == {d: names.count(d) for d in set(names)}
    assert index.op_counts_by_dialect["linalg"] >= 3  # nested ops are counted
    assert index.num_executables == 1 and index.num_lines == text.count("\n")


def test_f16_matmul(compiled):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT16, [128, 64])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT16, [64, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [128, 128])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "mm", [a, b], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    phases = compiled("matmul_f16", prepare(model))
    index = index_file(phase_file(phases, "flow"), "flow")
    (rec,) = index.dispatches
    assert rec.root.kind == "matmul"
    assert rec.onnx_nodes == ["mm"]
    out = format_dispatches(index)
    assert "  M=128 N=128 K=64\n" in out
    assert "  dtype: f16\n" in out
    assert rec.root.flops == 2 * 128 * 128 * 64


def test_phases_are_linked(compiled):
    phases = compiled("resnet50", prepare(onnx.load(ZOO / "light_resnet50.onnx")))
    paths = {p: phase_file(phases, p) for p in SNAPSHOT_PHASES}
    idx = index_workspace_phases(paths)
    flow = idx["flow"]
    assert any(r.producers for r in flow.dispatches)
    assert all(p < r.index for r in flow.dispatches for p in r.producers)
    for phase in ("dispatch-creation", "stream", "executable-configurations", "hal"):
        recs = idx[phase].dispatches
        assert len(recs) == len(flow.dispatches), phase
        for r, f in zip(recs, flow.dispatches):
            assert r.index == f.index
            if phase != "dispatch-creation":
                assert r.export == f.export, phase
            if f.root is not None and f.root.kind in ("conv", "depthwise_conv", "matmul"):
                assert r.root.kind == f.root.kind, phase
    conf = [r for r in idx["executable-configurations"].dispatches if r.root and r.root.kind == "conv"]
    assert conf and all(r.config.get("pipeline") and r.config.get("tile_sizes") for r in conf)
    assert idx["vm"].dispatches == []


def test_link_phase_indexes_one_by_one(compiled, tmp_path):
    """Phases indexed one at a time, one failing to parse, then linked."""
    phases = compiled("resnet50", prepare(onnx.load(ZOO / "light_resnet50.onnx")))
    paths = {p: phase_file(phases, p) for p in SNAPSHOT_PHASES}
    broken = tmp_path / "stream.mlir"
    broken.write_text(paths["stream"].read_text() + "\n}\n")  # an unbalanced brace
    paths["stream"] = broken
    indexes, errors = {}, {}
    for phase, path in paths.items():
        try:
            indexes[phase] = index_file(path, phase)
        except SnapshotParseError as e:
            errors[phase] = e
    assert set(errors) == {"stream"}
    flow = indexes["flow"]
    n = len(flow.dispatches)
    # before linking: hal knows no ops, and a shuffled phase keeps its order
    assert all(r.root is None for r in indexes["hal"].dispatches)
    # Each dispatch-creation region names its own nodes: as flow does for a
    # site with its own executable; more than flow does for a later site of
    # an executable IREE deduplicated (flow has its call-site location only).
    dc_names = [list(r.onnx_nodes) for r in indexes["dispatch-creation"].dispatches]
    uses = [r.executable for r in flow.dispatches]
    later = [i for i, e in enumerate(uses) if e in uses[:i]]
    own = [i for i, e in enumerate(uses) if uses.count(e) == 1]
    assert later and own
    assert all(flow.dispatches[i].onnx_nodes == dc_names[i] for i in own)
    assert all(set(flow.dispatches[i].onnx_nodes) < set(dc_names[i]) for i in later)
    conf = indexes["executable-configurations"]
    conf.dispatches.reverse()
    for i, r in enumerate(conf.dispatches):
        r.index = i
    link_phase_indexes(indexes)
    for phase in ("flow", "dispatch-creation", "executable-sources", "executable-configurations", "hal"):
        recs = indexes[phase].dispatches
        assert [r.index for r in recs] == list(range(n)), phase
        assert [r.export for r in recs] == [f.export for f in flow.dispatches], phase
        assert [r.producers for r in recs] == [f.producers for f in flow.dispatches], phase
        # the region's nodes first; a later phase may name a few more
        assert all(r.onnx_nodes[: len(d)] == d for r, d in zip(recs, dc_names)), phase
        if phase in ("flow", "dispatch-creation"):
            assert [r.onnx_nodes for r in recs] == dc_names, phase
        kinds = [(r.root.kind, f.root.kind) for r, f in zip(recs, flow.dispatches)
                 if f.root is not None and f.root.kind in ("conv", "matmul")]
        assert kinds and all(a == b for a, b in kinds), phase
    # linking again changes nothing; no flow index: nothing to link to
    before = {p: [d.to_json() for d in i.dispatches] for p, i in indexes.items()}
    link_phase_indexes(indexes)
    assert {p: [d.to_json() for d in i.dispatches] for p, i in indexes.items()} == before
    hal_only = {"hal": index_file(paths["hal"], "hal")}
    link_phase_indexes(hal_only)
    assert all(r.root is None for r in hal_only["hal"].dispatches)


def test_syntax_error(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(EXAMPLE_SNIPPET.replace("arith.addf %a, %b", "arith.addf %a %b"))
    with pytest.raises(SnapshotParseError) as info:
        index_file(bad, "flow")
    assert (info.value.line, info.value.path) == (3, str(bad))
    assert info.value.col == 21
    assert "expected ':'" in info.value.message or "expected" in info.value.message


EXAMPLE_SNIPPET = """func.func @f(%a: f32, %b: f32) -> f32 {
  // a comment
  %0 = arith.addf %a, %b : f32 loc("x")
  return %0 : f32
}
"""


def test_cli(fresh_example, capsys):
    from npu_studio.cli import main

    ws = fresh_example.root
    assert main(["dispatches", str(ws)]) == 0
    assert capsys.readouterr().out.startswith("Dispatch #0: conv  (ONNX: Conv_0)\n")
    assert main(["dispatches", str(ws), "--phase", "stream", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["phase"] == "stream" and data["dispatches"][0]["root"]["dims"]["F"] == 8
    flow = fresh_example.snapshot_path("flow")
    flow.write_text(EXAMPLE_SNIPPET.replace("%a, %b", "%a %b"))
    assert main(["dispatches", str(ws)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"npu-studio: error: {flow}:3:21: ") and "\n" not in err


def test_json_matches_schema(compiled):
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    phases = compiled("example", prepare(onnx.load(EXAMPLE)))
    for phase in ("flow", "executable-configurations", "hal"):
        validator.validate(json.loads(to_json(index_file(phase_file(phases, phase), phase))))
    # the schema itself rejects a broken document
    data = json.loads(to_json(index_file(phase_file(phases, "flow"), "flow")))
    data["dispatches"][0]["root"]["kind"] = "convolution"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_a_dispatch_that_only_moves_data_gets_a_kind_shapes_and_dtype(tmp_path):
    """IREE's slow_memcpy body of a pad: a 3x224x224 load stored at an offset into 3x230x230."""
    from npu_studio.core.ir.dispatch_index import index_text

    text = '''
module {
  flow.executable private @m$async_dispatch_0 {
    flow.executable.export public @m$async_dispatch_0_slow_memcpy workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }
    builtin.module {
      func.func @m$async_dispatch_0_slow_memcpy(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x224x224xf32>>, %arg1: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<3x230x230xf32>>) {
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [3, 224, 224], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x224x224xf32>> -> tensor<3x224x224xf32>
        iree_tensor_ext.dispatch.tensor.store %0, %arg1, offsets = [0, 3, 3], sizes = [3, 224, 224], strides = [1, 1, 1] : tensor<3x224x224xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<3x230x230xf32>>
        return
      }
    }
  }
  util.func public @main(%a: tensor<3x224x224xf32>, %b: tensor<3x230x230xf32>) -> tensor<3x230x230xf32> {
    %r = flow.dispatch @m$async_dispatch_0::@m$async_dispatch_0_slow_memcpy(%a, %b) : (tensor<3x224x224xf32>, tensor<3x230x230xf32>) -> %b
    util.return %r : tensor<3x230x230xf32>
  }
}
'''
    [rec] = index_text(text, "flow").dispatches
    assert rec.root is None and rec.kind == "insert"  # stored into part of a larger tensor
    assert rec.movement.inputs[0].shape == (3, 224, 224) and rec.movement.outputs[0].shape == (3, 230, 230)
    assert rec.movement.bytes_moved == 3 * 224 * 224 * 4  # f32, hand-computed
    assert rec.to_json()["movement"]["kind"] == "insert"


def test_a_dispatch_writing_into_a_splat_is_a_pad_and_into_anything_else_an_insert():
    """IREE lowers ONNX Pad to a splat of the pad value and a slow_memcpy storing the input into it;
    a concatenation's pieces are stored the same way into a tensor that is not a splat."""
    from npu_studio.core.ir.dispatch_index import index_text

    def module(destination: str) -> str:
        return f'''
module {{
  flow.executable private @m$async_dispatch_0 {{
    flow.executable.export public @m$async_dispatch_0_slow_memcpy workgroups() -> (index, index, index) {{
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }}
    builtin.module {{
      func.func @m$async_dispatch_0_slow_memcpy(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x8x8xf32>>, %arg1: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<3x10x10xf32>>) {{
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [3, 8, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x8x8xf32>> -> tensor<3x8x8xf32>
        iree_tensor_ext.dispatch.tensor.store %0, %arg1, offsets = [0, 1, 1], sizes = [3, 8, 8], strides = [1, 1, 1] : tensor<3x8x8xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<3x10x10xf32>>
        return
      }}
    }}
  }}
  util.func public @main(%a: tensor<3x8x8xf32>, %c: tensor<3x10x10xf32>) -> tensor<3x10x10xf32> {{
    %cst = arith.constant 5.000000e-01 : f32
    {destination}
    %r = flow.dispatch @m$async_dispatch_0::@m$async_dispatch_0_slow_memcpy(%a, %b) : (tensor<3x8x8xf32>, tensor<3x10x10xf32>) -> %b
    util.return %r : tensor<3x10x10xf32>
  }}
}}
'''

    [pad] = index_text(module("%b = flow.tensor.splat %cst : tensor<3x10x10xf32>"), "flow").dispatches
    [piece] = index_text(module("%b = flow.tensor.reshape %c : tensor<3x10x10xf32> -> tensor<3x10x10xf32>"),
                         "flow").dispatches
    assert (pad.kind, piece.kind) == ("pad", "insert")
    assert pad.to_json()["movement"]["kind"] == "pad" and pad.movement.bytes_moved == 3 * 8 * 8 * 4
