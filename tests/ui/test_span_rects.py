"""SpanRects: culling and per-pixel merging, against hand-computed rectangles."""

from __future__ import annotations

import numpy as np

from npu_studio.ui.schedule.span_rects import SpanRects


def test_bars_closer_than_half_a_pixel_merge_within_their_group_only():
    # row 0: [0,10] [10.2,20] (gap 0.2 < 0.5 px) and [30,40]; row 1: [5,15]
    item = SpanRects([0, 10.2, 30, 5], [10, 20, 40, 15], [0, 0, 0, 1], [1, 1, 1, 2], [0, 0, 0, 0], ["#000"])
    gs, ge, y0, y1, ci = item.visible_rects(0, 100, per_px=1.0)
    got = sorted(zip(gs.tolist(), ge.tolist(), y0.tolist()))
    assert got == [(0.0, 20.0, 0.0), (5.0, 15.0, 1.0), (30.0, 40.0, 0.0)]


def test_same_row_different_colour_is_not_merged():
    item = SpanRects([0, 10], [10, 20], [0, 0], [1, 1], [0, 1], ["#000", "#fff"])
    gs, ge, _, _, ci = item.visible_rects(0, 100, per_px=1.0)
    assert sorted(zip(gs.tolist(), ge.tolist(), ci.tolist())) == [(0.0, 10.0, 0), (10.0, 20.0, 1)]


def test_only_rectangles_in_view_are_kept_and_clipped_to_it():
    item = SpanRects([0, 50, 200], [10, 150, 210], [0, 0, 0], [1, 1, 1], [0, 0, 0], ["#000"])
    gs, ge, _, _, _ = item.visible_rects(100, 120, per_px=0.1)
    assert gs.tolist() == [100 - 0.1] and ge.tolist() == [120 + 0.1]


def test_a_100k_bar_row_zoomed_out_draws_at_most_one_rect_per_pixel():
    starts = np.arange(100_000, dtype=float) * 10
    item = SpanRects(starts, starts + 9, np.zeros(100_000), np.ones(100_000), np.zeros(100_000, int), ["#000"])
    gs, _, _, _, _ = item.visible_rects(0, 1_000_000, per_px=1_000_000 / 800)
    assert 1 <= len(gs) <= 800


def test_zoomed_out_frames_use_a_coarser_level_with_the_same_picture():
    rng = np.random.default_rng(0)
    starts = np.sort(rng.uniform(0, 1_000_000, 50_000))
    ends = starts + rng.uniform(1, 30, 50_000)
    rows = rng.integers(0, 3, 50_000)
    item = SpanRects(starts, ends, rows, rows + 0.7, np.zeros(50_000, int), ["#000"])
    assert len(item._levels) > 1  # pre-merged levels exist
    per_px = 1_000_000 / 800
    gs, ge, y0, _, _ = item.visible_rects(0, 1_000_000, per_px)
    base = item._levels[0][1]
    from npu_studio.ui.schedule.span_rects import _merge

    rs, re_, ry0, _, _, _ = _merge(base, 0, 1_000_000, per_px)
    # the same rectangles per row, ends within a pixel of merging the raw bars once
    for row in range(3):
        a, b = gs[y0 == row], rs[ry0 == row]
        assert len(a) == len(b)
        assert np.allclose(a, b, atol=per_px) and np.allclose(ge[y0 == row], re_[ry0 == row], atol=per_px)
