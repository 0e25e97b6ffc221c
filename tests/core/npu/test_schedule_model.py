"""ScheduleModel queries and text, on the hand-made schedule of tests/core/npu/schedule_sample.py."""

from __future__ import annotations

from tests.core.npu.schedule_sample import sample_model


def test_tasks_of_a_dispatch_and_their_span():
    m = sample_model()
    assert m.tasks_of_dispatch(0) == [0, 1, 2]
    assert m.span(m.tasks_of_dispatch(0)) == (0.0, 1000.0)
    assert m.bar_dispatch.tolist() == [0, 0, 0, 0, 0, 0, 1]


def test_dependencies_both_ways():
    m = sample_model()
    assert m.deps_of(2) == (1,)
    assert m.dependents_of(1) == (2,)
    assert m.dependents_of(3) == ()


def test_hover_text_names_task_dispatch_node_tile_bytes_and_times():
    text = sample_model().task_text(1)
    assert "task #1 npu.conv" in text
    assert 'dispatch #0 conv' in text and "conv_node" in text
    assert "tile at F0 OH8, size F8 OH8" in text
    assert "bytes moved: 512" in text
    assert "cycles: 600  start 100  end 700" in text
    assert "dma_in on DMA0: 100-200" in text and "compute on MAC: 400-700" in text


def test_hover_text_in_microseconds_at_the_target_clock():
    # 1000 MHz: 100 cycles = 0.1 us
    assert "start 0.100 us  end 0.700 us" in sample_model().task_text(1, "us")


def test_comparison_against_a_slower_run():
    fast, slow = sample_model(), sample_model(scale=2.0)
    c = fast.compare(slow)
    assert (c.before, c.after, c.delta) == (3000, 1500, -1500)
    assert c.per_dispatch == {0: (2000, 1000), 1: (1000, 500)}
    assert c.headline() == "total cycles 3,000 -> 1,500 (-50.0%)"


def test_onnx_names_from_locations():
    from npu_studio.core.npu.report.schedule_model import onnx_label

    assert onnx_label('loc("conv_node")') == "conv_node"
    assert onnx_label('loc(fused["a", "b", "a"])') == "a, b"
    assert onnx_label('loc("model.mlir":3:7)') == "-"
    assert onnx_label("") == "-"
    assert onnx_label("Conv_0, Relu_1") == "Conv_0, Relu_1"  # the NPU program's own form


def test_model_of_the_simulated_example_matches_its_program(example_flow, default_target):
    from npu_studio.core.npu.plan.passes import run_npu_pipeline
    from npu_studio.core.npu.report.schedule_model import ScheduleModel
    from npu_studio.core.npu.sim import simulate

    program = run_npu_pipeline(example_flow, default_target)
    m = ScheduleModel.from_result(program, simulate(program))
    assert len(m.bar_task) == sum(len(t.steps) for t in program.tasks)
    for d in program.dispatches:
        assert m.tasks_of_dispatch(d.index) == [t.id for t in program.tasks_of(d.index)]
    first = program.tasks[0]
    assert m.deps_of(first.id) == first.deps
    sizes = " ".join(f"{n}{s}" for n, s in zip(program.dispatches[first.dispatch].loop_dims, first.tile_sizes))
    assert f"size {sizes}" in m.task_text(first.id)
    assert {r.dispatch for r in m.rows} == {d.index for d in program.dispatches}
    assert m.engines[-1] == "cpu" and all(0 <= u <= 1 for u in m.totals.utilization.values())
    # every SRAM allocation belongs to a dispatch that has tasks
    assert set(m.alloc_dispatch.tolist()) <= {t.dispatch for t in program.tasks}
