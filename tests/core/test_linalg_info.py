"""describe_linalg_op on hand-written linalg ops of every kind."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from npu_studio.core.ir.linalg import (
    KINDS,
    OpDescription,
    TensorInfo,
    describe_linalg_op,
    dtype_nbytes,
)

MAPS = """
#conv_in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d1 * 2 + d4 * 2, d2 * 2 + d5 * 2)>
#conv_f = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d4, d5)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bc3 = affine_map<(d0, d1, d2) -> (d0)>
#tr_in = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#red_in = affine_map<(d0, d1) -> (d0, d1)>
#red_out = affine_map<(d0, d1) -> (d0)>
#f1_in = affine_map<(d0, d1, d2, d3) -> (d3, d1, d2)>
#f1_out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#dw_in = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
#dw_out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#dw_win = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
#g1_in = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#g1_out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#g1_hw_in = affine_map<(d0, d1, d2, d3) -> (d3, d0, d1)>
#g1_hw_out = affine_map<(d0, d1, d2, d3) -> (d2, d0, d1)>
#ng1_in = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#ng1_out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
"""


def _describe_all(body: str, args: str) -> list[OpDescription | None]:
    text = f"{MAPS}\nfunc.func @f({args}) {{\n{body}\n  return\n}}\n"
    ctx = ir.Context()
    module = ir.Module.parse(text, ctx)
    out: list[OpDescription | None] = []

    def cb(op):
        if op.name.startswith("linalg.") and op.name != "linalg.yield":
            out.append(describe_linalg_op(op))
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb)
    return out


def _one(body: str, args: str) -> OpDescription:
    (d,) = _describe_all(body, args)
    assert d is not None
    assert d.kind in KINDS
    return d


def test_tensor_info_sizes():
    t = TensorInfo((2, 3), "f16")
    assert t.is_static and t.num_elements == 6 and t.nbytes == 12
    d = TensorInfo((None, 3), "f32")
    assert not d.is_static and d.num_elements is None and d.nbytes is None
    assert TensorInfo((8,), "i1").nbytes == 8
    assert [dtype_nbytes(x) for x in ("bf16", "i8", "f8E4M3FN", "index", "i64")] == [2, 1, 1, 8, 8]


def test_named_conv_nchw():
    d = _one(
        "  %0 = linalg.conv_2d_nchw_fchw {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}"
        " ins(%x, %w : tensor<2x3x11x11xf32>, tensor<8x3x3x3xf32>) outs(%o : tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32>",
        "%x: tensor<2x3x11x11xf32>, %w: tensor<8x3x3x3xf32>, %o: tensor<2x8x5x5xf32>",
    )
    assert d.op_name == "linalg.conv_2d_nchw_fchw"
    assert d.kind == "conv"
    assert d.dims == {"N": 2, "C": 3, "H": 11, "W": 11, "F": 8, "KH": 3, "KW": 3, "OH": 5, "OW": 5}
    assert d.strides == (2, 2) and d.dilations == (1, 1) and d.groups is None
    assert d.loop_dims == ("N", "F", "OH", "OW", "C", "KH", "KW")
    assert d.iterator_types == ("parallel",) * 4 + ("reduction",) * 3
    assert d.flops == 2 * 2 * 8 * 5 * 5 * 3 * 3 * 3
    assert d.bytes_read == (2 * 3 * 11 * 11 + 8 * 27) * 4
    assert d.bytes_written == 2 * 8 * 25 * 4
    assert d.is_static


def test_generic_conv_with_collapsed_batch_and_dilation():
    # IREE's form of the example conv: batch loop gone, strides 2, dilation 2.
    d = _one(
        """  %0 = linalg.generic {indexing_maps = [#conv_in, #conv_f, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<3x13x13xf32>, tensor<8x3x3x3xf32>) outs(%o : tensor<8x5x5xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<8x5x5xf32>""",
        "%x: tensor<3x13x13xf32>, %w: tensor<8x3x3x3xf32>, %o: tensor<8x5x5xf32>",
    )
    assert d.kind == "conv"
    assert d.dims == {"N": 1, "C": 3, "H": 13, "W": 13, "F": 8, "KH": 3, "KW": 3, "OH": 5, "OW": 5}
    assert d.strides == (2, 2) and d.dilations == (2, 2)
    assert d.loop_dims == ("F", "OH", "OW", "C", "KH", "KW")


def test_depthwise_named():
    d = _one(
        "  %0 = linalg.depthwise_conv_2d_nchw_chw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}"
        " ins(%x, %w : tensor<1x16x10x10xf32>, tensor<16x3x3xf32>) outs(%o : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>",
        "%x: tensor<1x16x10x10xf32>, %w: tensor<16x3x3xf32>, %o: tensor<1x16x8x8xf32>",
    )
    assert d.kind == "depthwise_conv"
    assert d.groups == 16 and d.dims["G"] == 16
    assert d.dims["C"] == 16 and d.dims["F"] == 16
    assert (d.dims["KH"], d.dims["OH"]) == (3, 8)


def test_grouped_conv_is_conv_with_groups():
    d = _one(
        "  %0 = linalg.conv_2d_ngchw_gfchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}"
        " ins(%x, %w : tensor<1x2x4x10x10xf32>, tensor<2x6x4x3x3xf32>) outs(%o : tensor<1x2x6x8x8xf32>) -> tensor<1x2x6x8x8xf32>",
        "%x: tensor<1x2x4x10x10xf32>, %w: tensor<2x6x4x3x3xf32>, %o: tensor<1x2x6x8x8xf32>",
    )
    assert d.kind == "conv"
    assert d.groups == 2
    assert (d.dims["C"], d.dims["F"], d.dims["G"]) == (8, 12, 2)


def test_named_pooling():
    d = _one(
        "  %0 = linalg.pooling_nchw_max {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}"
        " ins(%x, %w : tensor<1x4x9x9xf32>, tensor<3x3xf32>) outs(%o : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>",
        "%x: tensor<1x4x9x9xf32>, %w: tensor<3x3xf32>, %o: tensor<1x4x4x4xf32>",
    )
    assert d.kind == "pooling"
    assert d.dims["C"] == 4 and d.dims["KH"] == 3 and d.dims["OH"] == 4
    assert d.strides == (2, 2)
    assert "G" not in d.dims and "F" not in d.dims


def test_generic_sum_pool_with_window_only_operand_is_pooling():
    d = _one(
        """  %0 = linalg.generic {indexing_maps = [#dw_in, #dw_win, #dw_out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %win : tensor<4x10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<4x8x8xf32>) {
    ^bb0(%a: f32, %w: f32, %c: f32):
      %s = arith.addf %c, %a : f32
      linalg.yield %s : f32
    } -> tensor<4x8x8xf32>""",
        "%x: tensor<4x10x10xf32>, %win: tensor<3x3xf32>, %o: tensor<4x8x8xf32>",
    )
    assert d.kind == "pooling"
    assert (d.dims["C"], d.dims["KH"], d.dims["KW"], d.dims["OH"]) == (4, 3, 3, 8)


def test_depthwise_with_folded_splat_filter():
    d = _one(
        """  %k = arith.constant 2.0e-02 : f32
  %0 = linalg.generic {indexing_maps = [#dw_in, #dw_win, #dw_out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %win : tensor<4x10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<4x8x8xf32>) {
    ^bb0(%a: f32, %w: f32, %c: f32):
      %m = arith.mulf %a, %k : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<4x8x8xf32>""",
        "%x: tensor<4x10x10xf32>, %win: tensor<3x3xf32>, %o: tensor<4x8x8xf32>",
    )
    assert d.kind == "depthwise_conv"
    assert d.groups == 4 and d.dims["C"] == 4 and d.dims["F"] == 4


def test_1x1_conv_with_folded_splat_filter():
    # resnet50's 1x1 convs after IREE folds the splat weight into the body
    d = _one(
        """  %k = arith.constant 2.0e-02 : f32
  %0 = linalg.generic {indexing_maps = [#f1_in, #f1_out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<64x56x56xf32>) outs(%o : tensor<256x56x56xf32>) {
    ^bb0(%a: f32, %c: f32):
      %m = arith.mulf %a, %k : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<256x56x56xf32>""",
        "%x: tensor<64x56x56xf32>, %o: tensor<256x56x56xf32>",
    )
    assert d.kind == "conv"
    assert d.dims == {"N": 1, "C": 64, "H": 56, "W": 56, "F": 256, "KH": 1, "KW": 1, "OH": 56, "OW": 56}
    assert d.loop_dims == ("F", "OH", "OW", "C")


_FOLDED_BODY = """    ^bb0(%a: f32, %c: f32):
      %m = arith.mulf %a, %k : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32"""


def test_grouped_1x1_conv_with_folded_filter_keeps_the_group_loop():
    # shufflenet's grouped 1x1 convs (C=24, F=112, group=4, 56x56 image):
    # (G, C/G, OH*OW) -> (G, F/G, OH*OW). The group loop d0 precedes the
    # channel loops in both maps; d2 (the image) follows them.
    d = _one(
        f"""  %k = arith.constant 2.0e-02 : f32
  %0 = linalg.generic {{indexing_maps = [#g1_in, #g1_out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%x : tensor<4x6x3136xf32>) outs(%o : tensor<4x28x3136xf32>) {{
{_FOLDED_BODY}
    }} -> tensor<4x28x3136xf32>""",
        "%x: tensor<4x6x3136xf32>, %o: tensor<4x28x3136xf32>",
    )
    assert d.kind == "conv"
    assert d.groups == 4
    assert d.dims == {"N": 1, "C": 24, "W": 3136, "F": 112, "KW": 1, "OW": 3136, "G": 4}
    assert d.loop_dims == ("G", "F", "OW", "C")
    assert d.strides == (1,) and d.dilations == (1,)


def test_1x1_conv_with_folded_filter_and_two_image_loops_has_no_group():
    # (C, OH, OW) -> (F, OH, OW) spelled with the image loops first: the
    # loop in front of the channel is an image loop in the input only.
    d = _one(
        f"""  %k = arith.constant 2.0e-02 : f32
  %0 = linalg.generic {{indexing_maps = [#g1_hw_in, #g1_hw_out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%x : tensor<6x7x9xf32>) outs(%o : tensor<28x7x9xf32>) {{
{_FOLDED_BODY}
    }} -> tensor<28x7x9xf32>""",
        "%x: tensor<6x7x9xf32>, %o: tensor<28x7x9xf32>",
    )
    assert d.kind == "conv" and d.groups is None
    assert d.dims == {"N": 1, "C": 6, "H": 7, "W": 9, "F": 28, "KH": 1, "KW": 1, "OH": 7, "OW": 9}


def test_grouped_1x1_conv_with_folded_filter_and_batch():
    # (N, G, C/G, OH*OW) -> (N, G, F/G, OH*OW): the batch loop precedes the group loop
    d = _one(
        f"""  %k = arith.constant 2.0e-02 : f32
  %0 = linalg.generic {{indexing_maps = [#ng1_in, #ng1_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}}
      ins(%x : tensor<2x4x6x49xf32>) outs(%o : tensor<2x4x28x49xf32>) {{
{_FOLDED_BODY}
    }} -> tensor<2x4x28x49xf32>""",
        "%x: tensor<2x4x6x49xf32>, %o: tensor<2x4x28x49xf32>",
    )
    assert d.kind == "conv"
    assert (d.dims["N"], d.dims["G"], d.dims["C"], d.dims["F"], d.dims["OW"]) == (2, 4, 24, 112, 49)
    assert d.loop_dims == ("N", "G", "F", "OW", "C")


def test_matmul_f16_dynamic():
    d = _one(
        "  %0 = linalg.matmul ins(%a, %b : tensor<?x64xf16>, tensor<64x128xf16>) outs(%c : tensor<?x128xf16>) -> tensor<?x128xf16>",
        "%a: tensor<?x64xf16>, %b: tensor<64x128xf16>, %c: tensor<?x128xf16>",
    )
    assert d.kind == "matmul"
    assert d.dims == {"M": None, "N": 128, "K": 64}
    assert d.loop_ranges == (None, 128, 64)
    assert d.loop_dims == ("M", "N", "K")
    assert d.flops is None and d.bytes_read is None and not d.is_static
    assert d.inputs[0] == TensorInfo((None, 64), "f16")
    assert d.dtype == "f16"


def test_batch_matmul():
    d = _one(
        "  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x8x16xbf16>, tensor<4x16x32xbf16>) outs(%c : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>",
        "%a: tensor<4x8x16xbf16>, %b: tensor<4x16x32xbf16>, %c: tensor<4x8x32xf32>",
    )
    assert d.kind == "batch_matmul"
    assert d.dims == {"B": 4, "M": 8, "N": 32, "K": 16}
    assert d.flops == 2 * 4 * 8 * 32 * 16  # the extf casts are not flops


@pytest.mark.parametrize(
    "body, args, kind",
    [
        (
            "  %0 = linalg.transpose ins(%t : tensor<10x3xf32>) outs(%u : tensor<3x10xf32>) permutation = [1, 0]",
            "%t: tensor<10x3xf32>, %u: tensor<3x10xf32>",
            "copy/transpose",
        ),
        (
            """  %0 = linalg.generic {indexing_maps = [#tr_in, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<10x3xf32>) outs(%u : tensor<3x10xf32>) {
    ^bb0(%a: f32, %c: f32):
      linalg.yield %a : f32
    } -> tensor<3x10xf32>""",
            "%t: tensor<10x3xf32>, %u: tensor<3x10xf32>",
            "copy/transpose",
        ),
        (
            """  %0 = linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<8x4x4xf32>, tensor<8xf32>) outs(%o : tensor<8x4x4xf32>) {
    ^bb0(%a: f32, %bb: f32, %c: f32):
      %s = arith.addf %a, %bb : f32
      linalg.yield %s : f32
    } -> tensor<8x4x4xf32>""",
            "%x: tensor<8x4x4xf32>, %b: tensor<8xf32>, %o: tensor<8x4x4xf32>",
            "elementwise",
        ),
        (
            """  %0 = linalg.generic {indexing_maps = [#red_in, #red_out], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<10x3xf32>) outs(%r : tensor<10xf32>) {
    ^bb0(%a: f32, %c: f32):
      %s = arith.maximumf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<10xf32>""",
            "%t: tensor<10x3xf32>, %r: tensor<10xf32>",
            "reduction",
        ),
        (
            "  %0 = linalg.fill ins(%s : f32) outs(%u : tensor<3x10xf32>) -> tensor<3x10xf32>",
            "%s: f32, %u: tensor<3x10xf32>",
            "other",
        ),
    ],
)
def test_other_kinds(body, args, kind):
    d = _one(body, args)
    assert d.kind == kind


def test_elementwise_flops_and_bytes():
    d = _one(
        """  %0 = linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<8x4x4xf16>, tensor<8xf16>) outs(%o : tensor<8x4x4xf16>) {
    ^bb0(%a: f16, %bb: f16, %c: f16):
      %s = arith.addf %a, %bb : f16
      %z = arith.constant 0.0 : f16
      %r = arith.maximumf %s, %z : f16
      linalg.yield %r : f16
    } -> tensor<8x4x4xf16>""",
        "%x: tensor<8x4x4xf16>, %b: tensor<8xf16>, %o: tensor<8x4x4xf16>",
    )
    assert d.flops == 2 * 8 * 4 * 4
    assert d.bytes_read == (128 + 8) * 2
    assert d.bytes_written == 128 * 2
    assert d.body_ops == ("arith.addf", "arith.maximumf")


def test_non_structured_ops_are_none():
    text = """func.func @f(%t: tensor<4xf32>) -> tensor<4xf32> {
  %1 = arith.addf %t, %t : tensor<4xf32>
  return %1 : tensor<4xf32>
}"""
    module = ir.Module.parse(text, ir.Context())
    seen = []

    def cb(op):
        seen.append((op.name, describe_linalg_op(op)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb)
    assert {n for n, _ in seen} >= {"arith.addf", "func.func"}
    assert all(d is None for _, d in seen)


def test_softmax_is_described():
    """linalg.softmax has no indexing maps; it is a softmax over its `dimension`."""
    text = """func.func @f(%t: tensor<2x3x5xf16>) -> tensor<2x3x5xf16> {
  %0 = linalg.softmax dimension(2) ins(%t : tensor<2x3x5xf16>) outs(%t : tensor<2x3x5xf16>) -> tensor<2x3x5xf16>
  return %0 : tensor<2x3x5xf16>
}"""
    module = ir.Module.parse(text, ir.Context())
    found = []
    module.operation.walk(lambda op: (found.append(describe_linalg_op(op)), ir.WalkResult.ADVANCE)[1])
    (d,) = [x for x in found if x is not None]
    assert d.kind == "softmax" and d.dims == {"axis": 2}
    assert d.iterator_types == ("parallel", "parallel", "reduction")
    assert d.loop_ranges == (2, 3, 5)
    assert d.bytes_read == d.bytes_written == 2 * 3 * 5 * 2
    # max, sub, exp, sum, div per element
    assert d.flops == 2 * 3 * 5 * 5
