import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from npu_studio.core.npu.plan.tiling import (
    Access, Loop, TilingError, TilingProblem, choose_tiles, enumerate_tiles, footprint, working_set,
)


def conv_problem(f, oh, ow, c, kh, kw, stride=1, eb=4):
    loops = (Loop("F", f), Loop("OH", oh), Loop("OW", ow),
             Loop("C", c, True), Loop("KH", kh, True), Loop("KW", kw, True))
    h, w = (oh - 1) * stride + kh, (ow - 1) * stride + kw
    inp = Access("in", "input", eb, ((((3, 1),), c), (((1, stride), (4, 1)), h), (((2, stride), (5, 1)), w)))
    wgt = Access("w", "weight", eb, ((((0, 1),), f), (((3, 1),), c), (((4, 1),), kh), (((5, 1),), kw)))
    out = Access("out", "output", eb, ((((0, 1),), f), (((1, 1),), oh), (((2, 1),), ow)))
    return TilingProblem(loops, (inp, wgt, out), (0, 2), (8, 8))


def test_conv_halo_footprint():
    p = conv_problem(8, 498, 498, 3, 3, 3)
    # 10 x 20 output tile of a 3x3 conv reads 12 x 22 inputs (halo of 2).
    assert footprint(p.accesses[0], (8, 10, 20, 3, 3, 3)) == (3, 12, 22)
    p2 = conv_problem(8, 100, 100, 3, 3, 3, stride=2)
    assert footprint(p2.accesses[0], (8, 10, 20, 3, 3, 3)) == (3, 21, 41)


def test_example_conv_fits_and_fills_array():
    p = conv_problem(8, 498, 498, 3, 3, 3)
    t = choose_tiles(p, 64 * 1024)
    assert 2 * working_set(p, t.sizes) == t.sram_bytes <= 64 * 1024
    assert t.sizes[0] == 8 and t.sizes[2] >= 8  # rows (F) full, cols (OW) at least one array width
    assert t.order[-3:] == (3, 4, 5)  # reductions innermost


def test_too_small_sram_raises():
    p = conv_problem(8, 498, 498, 3, 3, 3)
    try:
        choose_tiles(p, 256)
    except TilingError as e:
        assert "SRAM" in str(e)
    else:
        raise AssertionError("a 256-byte SRAM cannot hold a conv tile")


@st.composite
def problems(draw):
    n = draw(st.integers(1, 4))
    loops = tuple(Loop(f"l{i}", draw(st.integers(1, 12)), draw(st.booleans())) for i in range(n))
    accs = []
    for k in range(draw(st.integers(1, 3))):
        dims = []
        for _ in range(draw(st.integers(0, 3))):
            used = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2, unique=True))
            coeffs = tuple((i, draw(st.integers(1, 3))) for i in sorted(used))
            size = sum(c * (loops[i].size - 1) for i, c in coeffs) + 1
            dims.append((coeffs, size))
        accs.append(Access(f"a{k}", "input", draw(st.sampled_from([1, 2, 4])), tuple(dims)))
    arr = tuple(draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)))
    return TilingProblem(loops, tuple(accs), arr, tuple(draw(st.integers(1, 8)) for _ in arr))


@settings(max_examples=150, deadline=None)
@given(problems(), st.integers(256, 64 * 1024))
def test_tiles_fit_and_cover_exactly_once(p, sram):
    try:
        t = choose_tiles(p, sram)
    except TilingError:
        assert 2 * working_set(p, (1,) * len(p.loops)) > sram
        return
    assert t.sram_bytes <= sram
    assert all(1 <= s <= lp.size for s, lp in zip(t.sizes, p.loops))
    assert sorted(t.order) == list(range(len(p.loops)))
    seen = {}
    for offs, sizes in enumerate_tiles(p.loops, t.sizes, t.order):
        assert 2 * working_set(p, sizes) <= sram  # edge tiles too
        for pt in itertools.product(*(range(o, o + s) for o, s in zip(offs, sizes))):
            seen[pt] = seen.get(pt, 0) + 1
    assert len(seen) == math.prod(lp.size for lp in p.loops)
    assert set(seen.values()) == {1}
