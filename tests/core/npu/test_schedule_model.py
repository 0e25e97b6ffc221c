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
