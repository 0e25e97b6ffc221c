"""Quantized models: MAC rates, SRAM by stored types, and exact integer numerics.

Independent truths: a requantized tile worked out by hand below; onnxruntime
(QuantizeLinear rounds half to even and saturates); IREE's CPU build of each
dispatch on the same inputs (bit for bit); SCALE-Sim's fold formula with
the rate applied by hand.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from npu_studio.core.npu.numerics.check import check, run_onnxruntime
from npu_studio.core.npu.numerics.functional_sim import FunctionalSim
from npu_studio.core.run.dispatches.iree_dispatches import DispatchRunner, build
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.sim.cost import gemm_cycles, mac_cycles
from npu_studio.core.npu.target.target import RESOURCES, parse_target
from quant_models import TIE_X, qdq_conv_flow, tie_model
from tests.zoo_cache import cached_workspace, quant_zoo_workspace, zoo_workspace

# -- the hand-worked tile ------------------------------------------------------------
# y = QuantizeLinear(Conv(x, TIE_W), scale 2, zero point 3), x and TIE_W integers.
# Filter 0 = [[1, 1], [0, 0]]: acc = x[i][j] + x[i][j+1]
#   (0,0) 1+2 = 3   (0,1) 2+3 = 5   (1,0) 4+5 = 9   (1,1) 5-10 = -5
#   / 2 -> 1.5, 2.5, 4.5, -2.5; half to even -> 2, 2, 4, -2; + 3 -> 5, 5, 7, 1
#   (half away from zero would give 2, 3, 5, -3 -> 5, 6, 8, 0)
# Filter 1 = [[-10, -10], [-10, 0]]: acc = -10 (x[i][j] + x[i][j+1] + x[i+1][j])
#   (0,0) -70   (0,1) -100   (1,0) -10 (4+5+100) = -1090   (1,1) -10 (5-10+8) = -30
#   / 2 -> -35, -50, -545, -15; + 3 -> -32, -47, -542, -12; clamp -> -32, -47, -128, -12
HAND_ACC = np.array([[[3, 5], [9, -5]], [[-70, -100], [-1090, -30]]], np.int32)
HAND_Y = np.array([[[[5, 5], [7, 1]], [[-32, -47], [-128, -12]]]], np.int8)
HAND_Y_HALF_AWAY = np.array([[[[5, 6], [8, 0]], [[-32, -47], [-128, -12]]]], np.int8)


def _save(model: onnx.ModelProto, folder):
    path = folder / "ties.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def tie_ws():
    return cached_workspace("ties", lambda folder: _save(tie_model(), folder))


@pytest.fixture(scope="module")
def tie_program(tie_ws, default_target):
    return run_npu_pipeline(tie_ws.snapshot_path("flow"), default_target)


def test_hand_worked_requantized_tile(tie_ws, tie_program):
    conv = next(d for d in tie_program.dispatches if d.kind == "conv")
    assert conv.legal and conv.unit == "mac" and conv.acc_dtype == "i32"
    assert conv.epilogue == "requantize per-tensor, round half-even, zero point, clamp -128, 127, i8"
    seen = {}

    def look(dispatch, k, regions):
        if dispatch == conv.index:
            seen[k] = [np.array(r, copy=True) for r in regions]

    vmfb = build(tie_ws.snapshot_path("flow"), tie_ws.root / "npu" / "check", root=tie_ws.root)
    with DispatchRunner(vmfb) as runner:
        sim = FunctionalSim(tie_ws.snapshot_path("flow"), tie_program, tie_ws.params_path, runner, on_tile=look)
        result = sim.run("ties", [TIE_X])
    assert len(seen) == conv.num_tiles == 1
    acc = seen[0][0]
    assert acc.dtype == np.int32 and np.array_equal(acc.reshape(HAND_ACC.shape), HAND_ACC)
    assert result.outputs[0].dtype == np.int8 and np.array_equal(result.outputs[0], HAND_Y)
    d = next(o for o in result.dispatches if o.index == conv.index)
    assert d.computed_by == "npu" and d.max_error == 0.0  # IREE's dispatch on the same inputs
    # onnxruntime agrees with the hand computation (it rounds half to even too).
    assert np.array_equal(run_onnxruntime(tie_ws.source_path, [TIE_X])[0], HAND_Y)


def test_corrupted_rounding_is_caught_and_the_dispatch_named(tie_ws, tie_program):
    good = check(tie_ws, tie_program, [TIE_X])
    assert good.ok and good.vs_iree.max_error == 0.0 and good.vs_iree.tolerance == 0.0
    assert good.vs_onnxruntime.differing == 0 and good.vs_onnxruntime.elements == HAND_Y.size
    bad = check(tie_ws, tie_program, [TIE_X], stage_rounding="half-away")
    assert not bad.ok
    conv = next(d for d in tie_program.dispatches if d.kind == "conv")
    assert bad.first_divergent is not None and bad.first_divergent.index == conv.index
    assert bad.first_divergent.symbol == conv.symbol and "conv" in conv.symbol
    assert np.array_equal(bad.outputs[0], HAND_Y_HALF_AWAY)
    assert bad.vs_onnxruntime.differing == 3 and bad.vs_onnxruntime.max_steps == 1
    assert any(f"#{conv.index}" in line for line in bad.summary_lines())


def test_i8_written_back_from_an_i32_accumulator(tie_program):
    conv = next(d for d in tie_program.dispatches if d.kind == "conv")
    slots = {b.id: b for b in tie_program.buffers if b.id.startswith(f"s{conv.index}.")}
    acc = [b for b in slots.values() if b.dtype == "i32"]
    assert acc  # the output tile in SRAM holds the accumulator
    outs = [s for t in tie_program.tasks if t.dispatch == conv.index for s in t.steps if s.kind == "dma_out"]
    assert sum(s.bytes for s in outs) == HAND_Y.size  # 8 i8 values go back to DRAM, 1 byte each


def test_sram_footprints_use_the_stored_types(default_target):
    """The quantized Conv (8 -> 16 channels, 3x3, on 12x12 padded to 14x14): the tile
    16 F x 7 OH x 12 OW x 8 C x 3 x 3 holds i8 inputs and weights and an i32 accumulator."""
    p = run_npu_pipeline(qdq_conv_flow().read_text(), default_target)
    d = next(d for d in p.dispatches if d.kind == "conv")
    assert dict(zip(d.loop_dims, d.tile_sizes)) == {"F": 16, "OH": 7, "OW": 12, "C": 8, "KH": 3, "KW": 3}
    size = {b.id: b.size for b in p.buffers if b.placement == "sram"}
    align = lambda n: -(-n // 64) * 64  # noqa: E731 - SRAM allocations are 64-byte aligned
    assert size[f"s{d.index}.op0.0"] == align(8 * (7 + 2) * (12 + 2) * 1)  # input window, i8
    assert size[f"s{d.index}.op1.0"] == align(16 * 8 * 3 * 3 * 1)  # weights, i8
    assert size[f"s{d.index}.op2.0"] == align(16 * 7 * 12 * 4)  # accumulator, i32


# -- the MAC rate per input type ------------------------------------------------------
def test_mac_rate_divides_the_streamed_reduction():
    t = parse_target((RESOURCES / "default.toml").read_text(), "t.toml")  # 32 x 32, output-stationary
    dims, reds, sizes = ("M", "N", "K"), (False, False, True), (64, 32, 288)
    # SCALE-Sim output-stationary: ceil(M/R) ceil(N/C) (K + R + C - 2); i8 streams K / 4.
    assert mac_cycles(t, "matmul", dims, reds, sizes, "f32") == 2 * 1 * (288 + 62)
    assert mac_cycles(t, "matmul", dims, reds, sizes, "i8") == 2 * 1 * (72 + 62)
    assert mac_cycles(t, "matmul", dims, reds, sizes, "i16") == 2 * 1 * (144 + 62)
    ws = parse_target((RESOURCES / "default.toml").read_text().replace(
        'dataflow = "output-stationary"', 'dataflow = "weight-stationary"'), "ws.toml")
    # weight-stationary folds ceil(K/R) ceil(N/C) of 2R + C + M - 2: K / 4 -> 72 -> 3 folds
    assert mac_cycles(ws, "matmul", dims, reds, sizes, "i8") == gemm_cycles(64, 32, 72, 32, 32, "weight-stationary") \
        == 3 * 1 * (64 + 32 + 64 - 2)


@pytest.mark.slow
def test_int8_resnet50_takes_fewer_mac_cycles_than_f32(default_target):
    from npu_studio.core.npu.sim import simulate

    totals = {}
    for label, ws in (("i8", quant_zoo_workspace("resnet50", "i8")), ("f32", zoo_workspace("resnet50"))):
        program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
        result = simulate(program, default_target)
        totals[label] = sum(d.mac_cycles for d in result.dispatches)
    assert 0 < totals["i8"] < totals["f32"]


# -- simulate --check on quantized zoo models ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, activation", [
    ("squeezenet", "i8"),
    # each a minute or more on the 2-core CI machine: `make fuzz-models` runs them
    pytest.param("squeezenet", "u8", marks=pytest.mark.corpus),
    pytest.param("inception_v1", "i8", marks=pytest.mark.corpus),
    pytest.param("resnet50", "i8", marks=pytest.mark.corpus)])
def test_quantized_zoo_check_is_bit_identical_to_iree(name, activation, default_target):
    ws = quant_zoo_workspace(name, activation)
    program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
    report = check(ws, program)
    npu = [d for d in report.dispatches if d.computed_by == "npu"]
    # Every quantized result is IREE's bit for bit, float convolutions too: their sums
    # follow IREE's CPU order (ordered_sum). A float result may still differ in its
    # last bits where IREE approximates a function (LRN's powf): within f32 tolerance.
    quantized = [d for d in npu if d.dtype in ("int8", "uint8", "int32")]
    assert quantized and all(d.max_error == 0.0 for d in quantized), \
        [(d.index, d.max_error, d.note) for d in quantized if d.max_error]
    assert all(d.max_error <= 1e-5 * max(1.0, d.scale) for d in npu if d.dtype == "float32")
    assert report.vs_iree.max_error == 0.0
    # Against onnxruntime where the values vary: the light zoo's constant weights make
    # every logit equal, so the check compares the last quantized tensor that varies.
    steps = report.vs_onnxruntime
    assert steps.distinct > 1, f"the compared tensor {steps.tensor or 'output'} is constant"
    assert steps.elements >= 1000
    assert steps.max_steps <= 1 and steps.differing <= 0.01 * steps.elements, steps.line()


# -- decoder blocks: Resize and ConvTranspose ----------------------------------------------
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_and_conv_transpose_run_on_the_npu(mode, default_target):
    from quant_models import decoder_model

    ws = cached_workspace(f"decoder-{mode}", lambda folder: _save(decoder_model(mode), folder))
    program = run_npu_pipeline(ws.snapshot_path("flow"), default_target)
    assert all(d.legal for d in program.dispatches), [d.reason for d in program.dispatches if not d.legal]
    resize = next(d for d in program.dispatches if d.kind in ("elementwise", "gather"))  # nearest: a gather
    assert resize.unit == "vector" and "broadcast" in resize.symbol
    gathered = [b for b in program.buffers if b.id.startswith(f"s{resize.index}.g0.")]
    assert gathered and gathered[0].size >= 4 * 8 * 8 * 4  # the Relu output (4x8x8 f32) held whole
    convs = [d for d in program.dispatches if d.kind == "conv"]
    assert len(convs) == 2 and all(d.unit == "mac" for d in convs)  # the Conv and the ConvTranspose
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    report = check(ws, program, [x])
    assert report.ok, report.summary_lines()
    by_index = {d.index: d for d in report.dispatches}
    assert by_index[resize.index].computed_by == "npu" and by_index[resize.index].max_error <= 1e-5
    assert report.vs_onnxruntime.max_error <= 1e-4 * max(1.0, report.vs_onnxruntime.scale)
