"""The linalg interpreter on hand-written ops, against values computed here with plain numpy loops."""

from __future__ import annotations

import numpy as np
import pytest
from iree.compiler import ir

from npu_studio.core.npu.numerics.dispatch_eval import DispatchInterpreter, Tile

FUNC = """
func.func @f(%a: tensor<6x5xf32>, %b: tensor<12xf32>, %o: tensor<6xf32>, %p: tensor<6x5xf32>) -> (tensor<6xf32>, tensor<6x5xf32>) {
  // a reduction whose body is not `out + f(in)`: out * 0.5 + in, stepped point by point
  %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
       ins(%a : tensor<6x5xf32>) outs(%o : tensor<6xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %h = arith.constant 0.5 : f32
    %m = arith.mulf %acc, %h : f32
    %s = arith.addf %m, %x : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  // non-affine-linear indexing (mod, floordiv) and linalg.index in the body
  %q = linalg.generic {indexing_maps = [affine_map<(i, j) -> ((i * 5 + j) mod 12)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%b : tensor<12xf32>) outs(%p : tensor<6x5xf32>) {
  ^bb0(%x: f32, %y: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %c = arith.cmpf ogt, %x, %fi : f32
    %v = arith.select %c, %x, %fi : f32
    %e = math.exp %v : f32
    linalg.yield %e : f32
  } -> tensor<6x5xf32>
  return %r, %q : tensor<6xf32>, tensor<6x5xf32>
}
"""


def _func():
    ctx = ir.Context()
    module = ir.Module.parse(FUNC, ctx)
    return ctx, module, module.body.operations[0].operation


def _run_ops(func, a, b, tiles=None):
    """Run the function's linalg ops through the dispatch interpreter (no bindings: values direct)."""
    interp = DispatchInterpreter(func, tiles)
    block = func.regions[0].blocks[0]
    o = np.full(6, 2.0, np.float32)
    p = np.zeros((6, 5), np.float32)
    env = dict(zip(block.arguments, [a, b, o, p]))
    ops = [op.operation for op in block.operations]
    for op in ops[:-1]:
        interp._op(op, env)
    ret = ops[-1]
    return [env[v] for v in ret.operands]


def test_sequential_reduction_and_nonlinear_maps():
    ctx, module, func = _func()
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    b = rng.uniform(0, 6, 12).astype(np.float32)
    with ctx:
        r, q = _run_ops(func, a, b)
    want_r = np.full(6, 2.0, np.float64)
    for k in range(5):
        want_r = want_r * 0.5 + a[:, k]
    want_q = np.empty((6, 5))
    for i in range(6):
        for j in range(5):
            x = b[(i * 5 + j) % 12]
            want_q[i, j] = np.exp(x if x > i else i)
    np.testing.assert_allclose(r, want_r, rtol=1e-6)
    np.testing.assert_allclose(q, want_q, rtol=1e-6)


@pytest.mark.parametrize("tiles", [
    [Tile((0, 0), (4, 2)), Tile((0, 2), (4, 2)), Tile((0, 4), (4, 1)), Tile((4, 0), (2, 5))],
])
def test_root_op_tile_by_tile_keeps_reduction_order(tiles):
    """Tiles that split the reduction loop accumulate in task order, like linalg's sequential semantics."""
    ctx, module, func = _func()
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    b = rng.uniform(0, 6, 12).astype(np.float32)
    with ctx:
        whole, _ = _run_ops(func, a, b)
        tiled, _ = _run_ops(func, a, b, tiles)
    np.testing.assert_allclose(tiled, whole, rtol=1e-6)
