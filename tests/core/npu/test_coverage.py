"""NPU op coverage: mixed precision, transposed operands, softmax, DMA
transfers, rules as data, and one dispatch model shared with the table.

Expected numbers are worked out by hand from the model shapes.
"""

import math
import sys

import pytest
from checks import check_all
from flowgen import ZOO_NAMES, flow_snapshot
from npu_models import attention, f16_matmul, fire, i8_matmul

from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.npu.report.coverage import coverage, coverage_of_plans, legalize_flow
from npu_studio.core.npu.program.npu_dialect import from_mlir, to_mlir
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.backend.registry import load as load_backend
from npu_studio.core.npu.report.supported_ops import DOC as SUPPORTED_OPS_DOC
from npu_studio.core.npu.report.supported_ops import main as supported_ops_main
from npu_studio.core.npu.target.target import RESOURCES, TargetError, parse_target
from tests.zoo_cache import zoo_flow

RULES = list(load_backend("generic").rules)

DEFAULT = (RESOURCES / "default.toml").read_text()


def _target(old: str, new: str, name: str):
    assert old in DEFAULT
    return parse_target(DEFAULT.replace(old, new), name)


def _round_trips(p: NpuProgram) -> str:
    assert NpuProgram.from_json(p.to_json()) == p
    text = to_mlir(p)
    assert from_mlir(text) == p
    return text


def _table_agrees(flow, p: NpuProgram) -> None:
    """The dispatch table's record and the NPU report name the same kind and dims."""
    table = index_file(flow, "flow").dispatches
    assert len(table) == len(p.dispatches)
    for rec, d in zip(table, p.dispatches):
        assert d.kind == (rec.kind or "none"), d.index  # the table's kind, data movements too
        assert d.dims == ({k: v for k, v in rec.root.dims.items()} if rec.root else {}), d.index
        assert d.symbol == rec.export and d.location == ",".join(rec.onnx_nodes)


@pytest.fixture(scope="module")
def f16_flow():
    return flow_snapshot(f16_matmul())


def test_f16_matmul_on_the_npu_with_an_f32_accumulator(f16_flow, default_target):
    p = run_npu_pipeline(f16_flow, default_target)
    (d,) = p.dispatches
    assert d.legal and d.kind == "matmul" and d.unit == "mac"
    assert d.dims == {"M": 128, "N": 128, "K": 64}
    assert (d.dtype, d.acc_dtype) == ("f16", "f32")
    # Everything fits at once: A and B in f16, the output tile in the f32
    # accumulator, double-buffered.
    assert d.tile_sizes == (128, 128, 64) and d.num_tiles == 1
    assert d.sram_bytes == 2 * (128 * 64 * 2 + 64 * 128 * 2 + 128 * 128 * 4)
    (task,) = p.tasks
    moved = {s.kind: s.bytes for s in task.steps if s.kind != "dma_in"}
    assert sorted(s.bytes for s in task.steps if s.kind == "dma_in") == [128 * 64 * 2] * 2
    assert moved == {"compute": 0, "dma_out": 128 * 128 * 2}  # written back as f16
    assert p.to_dict()["dispatches"][0]["acc_dtype"] == "f32"
    assert 'acc_dtype = "f32"' in _round_trips(p)
    _table_agrees(f16_flow, p)
    check_all(p)


def test_f16_matmul_needs_the_accumulator_in_the_target(f16_flow):
    target = _target('accumulators = ["f32", "i32"]', 'accumulators = ["i32"]', "no_f32_acc.toml")
    no_f32 = parse_target(
        DEFAULT.replace('accumulators = ["f32", "i32"]', 'accumulators = ["i32"]')
        .replace('supported = ["f32", "f16", "bf16", "i8"]', 'supported = ["f16", "bf16", "i8"]'),
        "f16_only.toml")
    assert run_npu_pipeline(f16_flow, target).dispatches[0].legal  # f32 is a supported type
    (d,) = run_npu_pipeline(f16_flow, no_f32).dispatches
    assert (d.legal, d.rule) == (False, "accumulator")
    assert d.reason == "accumulator type not supported (f32 accumulator of f16xf16 inputs)"


def test_f16_matmul_on_the_tiny_target_tiles_in_64_kib(f16_flow, tiny_target):
    p = run_npu_pipeline(f16_flow, tiny_target)
    (d,) = p.dispatches
    assert d.legal and d.acc_dtype == "f32" and d.num_tiles > 1
    assert d.sram_bytes <= 64 * 1024
    check_all(p)


def test_i8_matmul_accumulates_and_writes_i32(default_target):
    flow = flow_snapshot(i8_matmul())
    p = run_npu_pipeline(flow, default_target)
    (d,) = p.dispatches
    assert d.legal and (d.kind, d.dtype, d.acc_dtype) == ("matmul", "i8", "i32")
    assert d.dims == {"M": 64, "N": 48, "K": 32}
    # i32 is no `dtypes.supported` type of the default target: the MAC op may
    # write its accumulator type all the same
    assert "i32" not in default_target.dtypes
    # the tile's operands double-buffered, each slot 64-byte aligned: i8 inputs,
    # the i32 accumulator
    m, n, k = (d.tile_sizes[d.loop_dims.index(x)] for x in "MNK")
    aligned = [-(-b // 64) * 64 for b in (m * k, k * n, m * n * 4)]
    assert d.sram_bytes == 2 * sum(aligned)
    _table_agrees(flow, p)


@pytest.fixture(scope="module")
def attention_flow():
    return flow_snapshot(attention())


def test_attention_block_runs_on_the_npu(attention_flow, default_target):
    p = run_npu_pipeline(attention_flow, default_target)
    assert [(d.kind, d.unit, d.legal) for d in p.dispatches] == [
        ("batch_matmul", "mac", True), ("softmax", "vector", True), ("batch_matmul", "mac", True)]
    qk, softmax, pv = p.dispatches
    assert qk.dims == {"B": 2, "M": 64, "N": 64, "K": 32} and pv.dims == {"B": 2, "M": 64, "N": 32, "K": 64}
    # Kᵀ is folded into Q·Kᵀ's indexing map: its second input is read (N, K)
    assert (qk.transposed, qk.transpose_by, pv.transposed) == (("input 1",), "dma", ())
    # a softmax tile holds whole rows (max, sum, divide over the last axis)
    assert softmax.tile_sizes[-1] == 64 and softmax.iterator_types[-1] == "reduction"
    # max, sub, exp, add, div on the default target: 1 + 1 + 4 + 1 + 4 cycles
    assert softmax.vector_cost == 11
    _table_agrees(attention_flow, p)
    _round_trips(p)
    check_all(p)


def test_transposed_operand_falls_back_when_the_target_cannot_transpose(attention_flow):
    target = _target('transpose = "dma"', 'transpose = "none"', "no_transpose.toml")
    reasons = run_npu_pipeline(attention_flow, target).reasons()
    assert reasons == ["Dispatch #0 not supported: transposed operand not supported "
                       "(input 1 transposed)"]


def test_softmax_needs_exp_in_the_vector_unit(attention_flow):
    target = _target("exp = 4\n", "", "no_exp.toml")
    p = run_npu_pipeline(attention_flow, target)
    assert p.reasons() == ["Dispatch #1 not supported: vector function not in the target "
                           "(exp for math.exp)"]
    assert p.dispatches[1].rule == "vector-function"


@pytest.fixture(scope="module")
def fire_flow():
    return flow_snapshot(fire())


def test_padding_dispatch_becomes_a_padded_dma_transfer(fire_flow, default_target):
    p = run_npu_pipeline(fire_flow, default_target)
    pads = [d for d in p.dispatches if d.unit == "dma"]
    # a data movement: the kind is the index's name for it (stored into part of a splat: a pad)
    assert [d.kind for d in p.dispatches].count("pad") == 1 and len(pads) == 1
    (d,) = pads
    assert d.legal and (d.transfer, d.pad_value) == ("pad", "0.0")
    (task,) = p.tasks_of(d.index)
    (step,) = task.steps
    # reads the 8x16x16 f32 activation, writes the 8x18x18 padded tensor
    assert (task.op, step.kind, step.bytes) == ("npu.transfer", "dma_copy",
                                                8 * 16 * 16 * 4 + 8 * 18 * 18 * 4)
    assert all(p.dispatches[i].legal for i in range(len(p.dispatches)))
    text = _round_trips(p)
    assert '"npu.dma_copy"' in text and 'pad_value = "0.0"' in text
    _table_agrees(fire_flow, p)
    check_all(p)


def test_padding_without_a_padding_dma_names_the_rule(fire_flow):
    target = _target("padded = true", "padded = false", "no_pad.toml")
    (reason,) = run_npu_pipeline(fire_flow, target).reasons()
    assert reason.endswith("padded transfer not supported (pad value 0.0)")


def test_coverage_report_groups_fallbacks_by_rule(fire_flow):
    target = _target("padded = true", "padded = false", "no_pad.toml")
    c = coverage(run_npu_pipeline(fire_flow, target))
    assert (c.dispatches, c.npu_dispatches) == (4, 3)
    assert list(c.by_rule()) == ["dma-padded"]
    # the pad moves data only: every FLOP is on the NPU
    assert c.flops_percent == 100.0 and c.flops > 0
    assert c.lines()[0].startswith("3 of 4 dispatches on the NPU, 100.00% of ")


def test_supported_ops_document_is_current():
    assert supported_ops_main(["--check"]) == 0
    text = SUPPORTED_OPS_DOC.read_text()
    assert all(f"`{r.id}`" in text and r.text in text for r in RULES)


def test_every_rule_has_a_text_and_unique_id():
    assert len({r.id for r in RULES}) == len(RULES)
    assert all(r.text and r.name for r in RULES)


def test_vector_function_errors_name_key_and_line():
    bad = DEFAULT.replace("erf = 8", "erf = 8\nsinh = 3")
    with pytest.raises(TargetError) as e:
        parse_target(bad, "t.toml")
    assert e.value.key == "vector.functions.sinh"
    assert e.value.line == bad.splitlines().index("sinh = 3") + 1
    with pytest.raises(TargetError) as e:
        parse_target(DEFAULT.replace("exp = 4", "exp = 0"), "t.toml")
    assert e.value.key == "vector.functions.exp" and "positive" in str(e.value)


@pytest.mark.slow
def test_light_zoo_coverage(default_target, capsys):
    """Legality only (no tiling, no MLIR round trip) on every light zoo model:
    no dispatch is left without a mapping, every fallback names a rule and a
    value, the NPU's kinds are the table's, and resnet50 has >= 99% of its
    FLOPs on the NPU."""
    report = []
    for name in ZOO_NAMES:
        flow = zoo_flow(name)  # the run's shared compile of the zoo model
        plans = legalize_flow(flow, default_target)
        for a in plans:
            rec = a.site.record
            assert a.kind == (rec.kind or "none"), (name, a.site.index)
            assert a.legal or (a.rule and a.reason.endswith(")")), (name, a.site.index)
            assert a.rule != "mapping", (name, a.site.index, a.reason)
        c = coverage_of_plans(plans, default_target)
        report.append(f"{name}: {c.lines()[0]}")
        if name == "resnet50":
            assert c.flops_percent >= 99.0
    with capsys.disabled():
        sys.stdout.write("\n" + "\n".join(report) + "\n")


# -- the simulator costs the new task kinds --------------------------------------
def _steps_of(result, dispatch: int):
    from npu_studio.core.npu.sim.results import STEP_KINDS

    return [(STEP_KINDS[k], e - s, b) for t, _, k, _, s, e, b, _ in result.steps.rows()
            if result.tasks.dispatch[t] == dispatch]


def test_simulator_costs_a_padded_transfer(fire_flow, default_target):
    from npu_studio.core.npu.sim import simulate

    p = run_npu_pipeline(fire_flow, default_target)
    (pad,) = [d for d in p.dispatches if d.unit == "dma"]
    r = simulate(p, default_target)
    read, written = 8 * 16 * 16 * 4, 8 * 18 * 18 * 4
    ((kind, cycles, moved),) = _steps_of(r, pad.index)
    assert (kind, moved) == ("dma_copy", read + written)
    # setup, then both directions over the DRAM port at 64 bytes per cycle
    # at best (other transfers running at the same time can only slow it)
    assert cycles >= 64 + -(-(read + written) // 64)
    stats = next(d for d in r.dispatches if d.index == pad.index)
    assert (stats.dram_read, stats.dram_written) == (read, written)


def test_simulator_costs_vector_functions(attention_flow, default_target):
    from npu_studio.core.npu.sim import simulate

    p = run_npu_pipeline(attention_flow, default_target)
    r = simulate(p, default_target)
    computes = [c for k, c, _ in _steps_of(r, 1) if k == "compute"]
    tiles = [math.prod(t.tile_sizes) for t in p.tasks_of(1)]
    assert sum(tiles) == 2 * 64 * 64
    # 11 cycles an element (max 1, sub 1, exp 4, add 1, div 4), 64 lanes
    assert computes == [-(-n * 11 // 64) for n in tiles]
