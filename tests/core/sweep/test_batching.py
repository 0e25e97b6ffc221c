"""Batches sized from measured point times: about TASK_SECONDS each, never across models,
shrinking at the end so every worker keeps a share (sizes worked out by hand)."""

from __future__ import annotations

from npu_studio.core.sweep.batching import FIRST_BATCH, TASK_SECONDS, Batcher


def test_batches_follow_the_measured_time_per_point():
    assert (FIRST_BATCH, TASK_SECONDS) == (2, 0.5)
    b = Batcher([("m1", list(range(10))), ("m2", list(range(3)))], workers=2)
    assert b.next() == ("m1", [0, 1])  # nothing measured yet
    assert b.next() == ("m1", [2, 3])
    b.record(2, 0.25)  # 0.125 s a point: 4 points make half a second
    assert b.next() == ("m1", [4, 5, 6, 7])  # 9 left, 5 a worker: 4
    b.record(4, 0.1)  # 6 points in 0.35 s: ceil(0.5 / 0.0583) = 9 points, but 5 left:
    assert b.next() == ("m1", [8, 9])  # 3 a worker, and m1 has 2 left
    assert b.next() == ("m2", [0, 1])  # 3 left: 2 a worker
    assert b.next() == ("m2", [2])
    assert b.next() is None
    assert b.sizes == [2, 2, 4, 2, 2, 1]


def test_slow_points_go_one_at_a_time():
    b = Batcher([("m", list(range(6)))], workers=1)
    b.next()
    b.record(2, 3.0)  # 1.5 s a point: a batch of one is already over half a second
    assert [len(b.next()[1]) for _ in range(4)] == [1, 1, 1, 1]
    assert b.next() is None
