"""Quantized (int8 QDQ) models on the NPU: target format, legality, the output stage.

The models are made here: onnxruntime's `quantize_static` (QDQ, per-channel
int8 weights, seeded calibration) on a Conv + Relu of our own and on
light-zoo models. The truths the tests check against come from outside the
code under test: ONNX QuantizeLinear's definition (round half to even,
saturate to [-128, 127] for int8, [0, 255] for uint8), the target file's
own text, and the quantizer's choice of per-channel weights.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from npu_studio.core.npu.report.coverage import coverage_of_plans, legalize_flow
from npu_studio.core.npu.program.npu_ir import DispatchInfo
from npu_studio.core.npu.plan.op_kinds import MAC_KINDS
from npu_studio.core.npu.target.target import RESOURCES, NpuTarget, TargetError, parse_target
from quant_models import qdq_conv_flow
from tests.zoo_cache import quant_zoo_workspace

DEFAULT = (RESOURCES / "default.toml").read_text()
STAGE_BLOCK = DEFAULT[DEFAULT.index("[output_stage]"):DEFAULT.index("[vector]")]


def _target(text: str, name: str = "t.toml") -> NpuTarget:
    return parse_target(text, name)


def _without_stage(text: str) -> str:
    return text.replace(STAGE_BLOCK, "")


# -- the target format -----------------------------------------------------------------
def test_output_stage_and_mac_rates_load_with_defaults():
    t = _target(DEFAULT)
    s = t.output_stage
    assert s.present and set(s.scale) == {"per-tensor", "per-channel"}
    assert (s.rounding, s.zero_point, s.clamp, s.bias) == ("half-even", True, True, True)
    assert set(s.narrow) == {"i8", "ui8", "i16"}
    assert (t.mac_rate("i8"), t.mac_rate("f16"), t.mac_rate("f32"), t.mac_rate("f64")) == (4, 1, 1, 1)
    for fn in ("roundeven", "itof", "ftoi"):
        assert t.function_cost(fn) == 1
    # Without the tables: no output stage, one MAC per cycle for every type.
    bare = _target(_without_stage(DEFAULT).replace(
        DEFAULT[DEFAULT.index("[mac_array.macs_per_cycle]"):DEFAULT.index("[output_stage]")], ""))
    assert not bare.output_stage.present and bare.mac_rate("i8") == 1
    # A program written before these keys existed still loads.
    old = t.to_dict()
    del old["output_stage"], old["macs_per_cycle"]
    assert not NpuTarget.from_dict(old).output_stage.present
    assert NpuTarget.from_dict(t.to_dict()) == t


@pytest.mark.parametrize("old, new, key, words", [
    ('rounding = "half-even"', 'rounding = "nearest"', "output_stage.rounding", "half-away"),
    ('scale = ["per-tensor", "per-channel"]', 'scale = ["per-row"]', "output_stage.scale", "per-channel"),
    ('narrow = ["i8", "ui8", "i16"]', 'narrow = ["i4"]', "output_stage.narrow", "i16"),
    ('narrow = ["i8", "ui8", "i16"]', 'narrow = []', "output_stage.narrow", "at least one"),
    ("zero_point = true", "zero_point = 1", "output_stage.zero_point", "true or false"),
    ("i8 = 4", "i8 = 0", "mac_array.macs_per_cycle.i8", "1..64"),
    ("i8 = 4", "i8 = 65", "mac_array.macs_per_cycle.i8", "1..64"),
    ("i8 = 4", "q4 = 4", "mac_array.macs_per_cycle.q4", "unknown element type"),
])
def test_bad_integer_keys_name_key_and_line(old, new, key, words):
    text = DEFAULT.replace(old, new)
    assert text != DEFAULT
    with pytest.raises(TargetError) as e:
        _target(text)
    assert e.value.key == key and words in str(e.value)
    assert e.value.line == next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(new))


# -- legality of a quantized Conv + Relu --------------------------------------------------
@pytest.fixture(scope="module")
def qconv_flow():
    return qdq_conv_flow("i8")


def _conv(flow, target):
    plans = legalize_flow(flow, target)
    return next(a for a in plans if a.kind == "conv"), plans


def test_requantization_runs_in_the_output_stage(qconv_flow, default_target):
    conv, plans = _conv(qconv_flow, default_target)
    assert conv.legal and conv.unit == "mac" and conv.acc_dtype == "i32"
    assert conv.root_input_dtypes == ("i8", "i8")
    (rq,) = conv.requant
    # QuantizeLinear to int8: round half to even, saturate to [-128, 127];
    # quantize_static(per_channel=True) gives one weight scale per output channel.
    assert (rq.rounding, rq.narrow, rq.clamp, rq.scale) == ("half-even", "i8", (-128.0, 127.0), "per-channel")
    assert rq.zero_point and rq.bias
    assert rq.ops[0] == "arith.sitofp" and rq.ops[-1] == "arith.fptosi"
    # What the stage takes is no vector-unit work.
    assert "math.roundeven" not in conv.vector_ops and "arith.fptosi" not in conv.vector_ops
    assert conv.epilogue.startswith("requantize per-channel, bias, round half-even, zero point, "
                                    "clamp -128, 127, i8")
    # The standalone QuantizeLinear of the input runs on the vector unit.
    quant = next(a for a in plans if a.kind == "elementwise")
    assert quant.legal and quant.unit == "vector"
    assert {"math.roundeven", "arith.fptosi"} <= set(quant.vector_ops)


def test_other_rounding_leaves_the_round_to_the_vector_unit(qconv_flow):
    half_away = DEFAULT.replace('rounding = "half-even"', 'rounding = "half-away"')
    conv, _ = _conv(qconv_flow, _target(half_away.replace("roundeven = 1\n", "")))
    assert not conv.legal and conv.rule == "vector-function"
    assert conv.reason == ("vector function not in the target (roundeven for math.roundeven in the "
                           "epilogue (math.roundeven rounds half-even, the output stage rounds half-away))")
    conv, _ = _conv(qconv_flow, _target(half_away))  # the vector unit has roundeven: legal
    assert conv.legal and not conv.requant and "math.roundeven" in conv.vector_ops


def test_no_output_stage_and_no_casts_fall_back_naming_the_epilogue(qconv_flow):
    text = _without_stage(DEFAULT).replace("ftoi = 1\n", "")
    conv, plans = _conv(qconv_flow, _target(text))
    assert not conv.legal and conv.rule == "vector-function"
    assert conv.reason.endswith("(ftoi for arith.fptosi in the epilogue (the target has no output stage))")
    quant = next(a for a in plans if a.kind == "elementwise")
    assert quant.reason == "vector function not in the target (ftoi for arith.fptosi)"


def test_i32_bias_needs_an_i32_accumulator(qconv_flow):
    conv, _ = _conv(qconv_flow, _target(DEFAULT.replace('accumulators = ["f32", "i32"]',
                                                        'accumulators = ["f32"]')))
    assert not conv.legal and conv.rule == "dtype" and conv.reason.startswith(
        "element type not supported (i32 in input") and conv.reason.endswith(", read by the epilogue)")


def test_npu_ir_records_the_requantization(qconv_flow, default_target):
    from npu_studio.core.npu.plan.passes import run_npu_pipeline

    program = run_npu_pipeline(qconv_flow.read_text(), default_target)
    d = next(d for d in program.dispatches if d.kind == "conv")
    assert d.requant[0]["rounding"] == "half-even" and d.requant[0]["narrow"] == "i8"
    assert d.epilogue.startswith("requantize per-channel")
    again = DispatchInfo.from_dict(program.to_dict()["dispatches"][d.index])
    assert [float(v) for v in again.requant[0]["clamp"]] == [-128.0, 127.0]
    # the program's MLIR form carries them too (what the C interpreter of issue 29 reads)
    from npu_studio.core.npu.program.npu_dialect import from_mlir, parse_module, to_mlir, verify

    text = to_mlir(program)
    assert verify(parse_module(text)) == [] and from_mlir(text) == program


# -- light-zoo models quantized in the test -------------------------------------------
QUANT_ZOO = [("resnet50", "i8"), ("squeezenet", "i8"), ("inception_v1", "i8"), ("squeezenet", "u8")]


@pytest.mark.slow
@pytest.mark.parametrize("name, activation", [  # in `make test`: squeezenet-i8 (resnet50-i8, 37 s, with the corpus)
    pytest.param(n, a, marks=pytest.mark.corpus) if (n, a) != ("squeezenet", "i8") else (n, a)
    for n, a in QUANT_ZOO])
def test_quantized_zoo_puts_mac_flops_on_the_npu(name, activation, default_target, capsys):
    """>= 99% of the MAC FLOPs (convolutions and matmuls) on the NPU; every
    fallback names its rule and the offending value."""
    ws = quant_zoo_workspace(name, activation)
    plans = legalize_flow(ws.snapshot_path("flow"), default_target)
    mac = [a for a in plans if a.kind in MAC_KINDS]
    total = sum(a.flops for a in mac)
    # IREE forms i8 x i8 -> i32 ops where the QDQ pattern allows; some convs stay f32
    integer = sum(a.flops for a in mac if a.root_input_dtypes[0] == "i8" and a.acc_dtype == "i32")
    assert integer > 0
    on_npu = sum(a.flops for a in mac if a.legal)
    assert on_npu >= 0.99 * total, [a.reason for a in mac if not a.legal]
    for a in plans:
        assert a.legal or (a.rule and a.reason.endswith(")")), (a.site.index, a.reason)
    with capsys.disabled():
        sys.stdout.write(f"\n{name} {activation}: {coverage_of_plans(plans).lines()[0]}; "
                         f"{100 * integer / total:.1f}% of MAC FLOPs in i8 x i8 -> i32\n")


# -- the dispatch index shows the quantization ---------------------------------------
def test_dispatch_index_shows_scales_zero_points_and_accumulator(example_flow):
    """The tie model: QuantizeLinear(Conv(x, w), scale 2, zero point 3) to int8."""
    import json

    import jsonschema

    from npu_studio.core.ir.dispatch_index import index_text
    from npu_studio.core.ir.dispatch_report import format_dispatches
    from flowgen import flow_snapshot
    from quant_models import TIE_OUT_SCALE, TIE_OUT_ZERO_POINT, tie_model

    index = index_text(flow_snapshot(tie_model()).read_text(), "flow")
    conv = next(r for r in index.dispatches if r.root is not None and r.root.kind == "conv")
    q = conv.quant
    assert (q["inputs"], q["accumulator"]) == ("i8 x i8", "i32")
    (rq,) = q["requant"]
    assert rq["scales"] == [f"/ {TIE_OUT_SCALE:g}"] and rq["zero_point_value"] == TIE_OUT_ZERO_POINT
    assert (rq["rounding"], rq["narrow"], [float(v) for v in rq["clamp"]]) == ("half-even", "i8", [-128.0, 127.0])
    text = format_dispatches(index)
    assert "quantized: i8 x i8 -> i32 accumulator" in text
    assert "requantize per-tensor, round half-even, zero point, clamp -128, 127, i8 (/ 2; zero point 3)" in text
    schema = json.loads((Path(__file__).resolve().parents[3] / "docs" / "dispatch-index.schema.json").read_text())
    jsonschema.validate(index.to_json(), schema)
    # a float model's dispatches have none
    assert all(r.quant is None for r in index_text(example_flow.read_text(), "flow").dispatches)


def test_npu_command_prints_the_epilogue(capsys):
    from npu_studio.cli import main
    from flowgen import flow_snapshot
    from quant_models import tie_model

    assert main(["npu", str(flow_snapshot(tie_model()))]) == 0
    out = capsys.readouterr().out
    assert "conv -> NPU mac" in out and "i8 -> acc i32" in out
    assert "    epilogue: requantize per-tensor, round half-even, zero point, clamp -128, 127, i8\n" in out
