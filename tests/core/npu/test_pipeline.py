import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from checks import check_all
from flowgen import ZOO_NAMES, flow_snapshot
from sim.sim_checks import check_simulation
from tests.zoo_cache import zoo_flow
from npu_studio.core.npu.program.npu_dialect import NpuDialectError, from_mlir, parse_module, to_mlir, verify
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.program.npu_ir import NpuError
from npu_studio.core.npu.plan.passes import NPU_PASSES, pipeline_text, run_npu_pipeline
from npu_studio.core.npu.target.target import RESOURCES, load_target, parse_target

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "docs" / "npu-ir.schema.json").read_text())


def validate(value, schema):
    jsonschema.Draft202012Validator(schema).validate(value)


def check_forms(p: NpuProgram):
    d = p.to_dict()
    validate(d, SCHEMA)
    assert NpuProgram.from_json(p.to_json()) == p
    text = to_mlir(p)
    assert verify(parse_module(text)) == []
    assert from_mlir(text) == p


def test_pipeline_lists_passes():
    text = pipeline_text()
    positions = [text.index(name) for name in NPU_PASSES]
    assert positions == sorted(positions)
    assert "canonicalize" in text and "cse" in text


def test_example_conv_legal_with_f32(example_flow, default_target):
    p = run_npu_pipeline(example_flow, default_target)
    (d,) = p.dispatches
    assert d.legal and d.kind == "conv" and d.reason == ""
    assert dict(zip(d.loop_dims, d.loop_ranges)) == {"F": 8, "OH": 498, "OW": 498, "C": 3, "KH": 3, "KW": 3}
    assert d.num_tiles == len(p.tasks) > 1
    assert all(t.op == "npu.conv" and not t.fallback for t in p.tasks)
    check_all(p)
    check_forms(p)


def test_example_conv_illegal_without_f32(example_flow, no_f32_target):
    p = run_npu_pipeline(example_flow, no_f32_target)
    assert p.reasons() == ["Dispatch #0 not supported: element type not supported (f32 in input 0)"]
    (t,) = p.tasks
    assert t.fallback and t.op == "npu.fallback" and [s.kind for s in t.steps] == ["cpu"]
    with pytest.raises(NpuError, match=r"element type not supported \(f32 in input 0\)"):
        run_npu_pipeline(example_flow, no_f32_target, strict=True)
    check_forms(p)


def test_small_sram_tiles_fit(example_flow, tiny_f32_target):
    p = run_npu_pipeline(example_flow, tiny_f32_target)
    assert p.dispatches[0].legal and p.sram_peak <= 64 * 1024
    assert len(p.tasks) > 20
    check_all(p)
    check_forms(p)


def softmax_of_a_long_row() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8192])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8192])
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "LongSoftmax", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_no_tile_fits_falls_back_by_rule_sram_fit():
    """npu-tile records that no tile fits (a softmax tile holds a whole row: 2 x 32 KiB,
    double-buffered, in 64 KiB); the sram-fit rule gives the reason."""
    text = (RESOURCES / "default.toml").read_text().replace("size_kib = 2048", "size_kib = 64")
    target = parse_target(text, "default_64k.toml")
    flow = flow_snapshot(softmax_of_a_long_row())
    p = run_npu_pipeline(flow, target)
    (d,) = [d for d in p.dispatches if d.kind == "softmax"]
    assert not d.legal and d.rule == "sram-fit"
    assert d.reason == ("does not fit in SRAM (smallest tile needs 131072 bytes of SRAM double-buffered, "
                        "target has 65536)")
    with pytest.raises(NpuError, match=r"rejected by npu-tile .*does not fit in SRAM"):
        run_npu_pipeline(flow, target, strict=True)
    check_all(p)
    check_forms(p)


def dynamic_batch_conv() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 3, 3, 3).astype(np.float32), "W")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 30, 30])
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="Conv_0")],
                          "DynConv", [x], [y], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_dynamic_batch_is_rejected(default_target):
    p = run_npu_pipeline(flow_snapshot(dynamic_batch_conv()), default_target)
    assert p.reasons() == ["Dispatch #0 not supported: dynamic shape (dim 0 of input 0 is ?)"]
    check_all(p)
    check_forms(p)


@pytest.mark.parametrize("name", ["resnet50"])
def test_zoo_default(name, default_target, tiny_f32_target):
    _zoo(name, default_target, tiny_f32_target)


# The heaviest three run with the corpus (`make fuzz-models`): `make test` has a time budget.
CORPUS_ZOO = {"densenet121", "vgg19", "inception_v2"}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.corpus) if n in CORPUS_ZOO else n
                                  for n in ZOO_NAMES if n != "resnet50"])
def test_zoo_slow(name, default_target, tiny_f32_target):
    _zoo(name, default_target, tiny_f32_target)


def _zoo(name, default_target, small_target):
    """Invariants on both bundled targets and the 64 KiB one with f32 (where
    the f32 zoo tiles: the bundled tiny target has no f32); each program
    simulated, its schedule and Perfetto trace checked. The forms round-trip
    on the default target. (On the 64 KiB target the programs have up to 120k
    tasks: vgg19's round trip alone took 7 minutes of `make test`; the forms
    are the same code at any size, and test_small_sram_tiles_fit checks them
    on the 64 KiB target. jsonschema is as slow on their traces, so these
    check the trace's invariants only.)"""
    flow = zoo_flow(name)
    n_sites = flow.read_text().count("= flow.dispatch @")
    tiny = load_target("tiny")
    for target in (default_target, tiny, small_target):
        p = run_npu_pipeline(flow, target)
        assert [d.index for d in p.dispatches] == list(range(n_sites))
        check_all(p)
        if target is not tiny:
            assert any(d.legal for d in p.dispatches)
        if target is default_target:
            check_forms(p)
        check_simulation(p, validate_schema=target is not small_target)


def test_dataflow_of_resnet50(default_target):
    p = run_npu_pipeline(zoo_flow("resnet50"), default_target)
    deps = {d.index: set(d.deps) for d in p.dispatches}
    # the stem: #1 (conv) reads #0 (pad copy), #2 (max pool) reads #1
    assert deps[1] == {0} and deps[2] == {1}
    # every dispatch but the first depends on something
    assert all(deps[i] for i in range(1, len(deps)))


def test_verifier_catches_broken_programs(example_flow, default_target):
    p = run_npu_pipeline(example_flow, default_target)
    text = to_mlir(p)
    # a dependency cycle: task 0 waits for the last even task (which reaches
    # back to task 0 through the double-buffer chain t -> t-2)
    last = (len(p.tasks) - 1) // 2 * 2
    cyc = text.replace('%t0 = "npu.conv"() ({', f'%t0 = "npu.conv"(%t{last}) ({{', 1)
    cyc = cyc.replace(': () -> !npu.token', ': (!npu.token) -> !npu.token', 1)
    assert any("cycle" in e for e in verify(parse_module(cyc)))
    bad_dir = text.replace('direction = "in"', 'direction = "sideways"', 1)
    assert any("direction" in e for e in verify(parse_module(bad_dir)))
    head, tasks = text.split("%t0 =", 1)  # first task, not the npu.dispatch op
    big = head + "%t0 =" + tasks.replace("tile_sizes = [8 : i64,", "tile_sizes = [9 : i64,", 1)
    assert any("exceeds dim" in e for e in verify(parse_module(big)))
    no_attr = re.sub(r"dispatch = 0 : i64, ", "", text, count=1)
    assert any("missing attribute 'dispatch'" in e for e in verify(parse_module(no_attr)))
    with pytest.raises(NpuDialectError):
        from_mlir(bad_dir)


def test_pipeline_output_matches_the_schema(example_flow, default_target):
    validate(run_npu_pipeline(example_flow, default_target).to_dict(), SCHEMA)
    # the schema itself rejects a broken document
    broken = run_npu_pipeline(example_flow, default_target).to_dict()
    del broken[SCHEMA["required"][0]]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken, SCHEMA)
