from hypothesis import given, settings
from hypothesis import strategies as st

from npu_studio.core.npu.plan.memory_plan import PlanError, Request, allocate, overlaps
from npu_studio.core.npu.plan.tiling import align


def test_reuses_dead_space_and_separates_live():
    offs, peak = allocate([Request("a", 1000, 0, 2), Request("b", 1000, 2, 4), Request("c", 64, 1, 3)])
    assert offs["a"] == offs["b"]  # a is dead when b starts
    assert not overlaps((offs["a"], 1024, 0, 2), (offs["c"], 64, 1, 3))
    assert peak == 1024 + 64


def test_capacity():
    try:
        allocate([Request("a", 100, 0, 2), Request("b", 100, 1, 3)], capacity=128)
    except PlanError as e:
        assert "b" in str(e)
    else:
        raise AssertionError("two live 100-byte buffers cannot share 128 bytes")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 20), st.integers(1, 10)), max_size=25))
def test_no_live_overlap(reqs):
    rs = [Request(f"r{i}", s, a, a + l) for i, (s, a, l) in enumerate(reqs)]
    offs, peak = allocate(rs)
    for i, x in enumerate(rs):
        assert offs[x.id] % 64 == 0 and offs[x.id] + align(x.size) <= peak
        for y in rs[i + 1:]:
            assert not overlaps((offs[x.id], align(x.size), x.start, x.end),
                                (offs[y.id], align(y.size), y.start, y.end))
    # never worse than no reuse at all
    assert peak <= sum(align(r.size) for r in rs)
