"""What a linalg structured op computes: its kind, named dimensions and cost.

`describe_linalg_op` looks at one parsed op (from `iree.compiler.ir`) and
returns an `OpDescription`. Convolutions and contractions are recognised
with MLIR's own interfaces (`isa_convolution_op`,
`infer_convolution_dimensions`, `isa_contraction_op`,
`infer_contraction_dimensions`), which also work on the `linalg.generic`
form IREE turns named ops into.

One more form needs structural analysis: when a model's filter is a splat
constant, IREE folds the filter into the body (`mulf %in, %cst`), so the
op has a single data input. Such a "folded-filter" convolution is told
apart from pooling by its body (a multiply by a value that is not a block
argument) or by a reduction over an input channel / an output channel
that no input indexes. With the filter gone, a grouped convolution's group
loop is a plain loop shared by input and output, like an image loop; it
is told apart by position (directly in front of the channel loops in both
maps, see `_group_loop`).

Dimension conventions for convolutions: N C H W F KH KW OH OW (+ G when
a groups/depth loop is present). C and F are totals over all groups, like
ONNX's Conv: C = G * channels-per-group. For 1-D and 3-D convolutions the
spatial names are W/KW/OW and D/KD/OD, H/KH/OH, W/KW/OW. When IREE has
collapsed the batch loop, N is reported as 1. H and W are the extents of
the op's input image, which includes any padding (IREE pads explicitly).
When IREE has collapsed a 1x1 convolution's output image into one loop,
the op looks like a 1-D convolution (W/KW/OW, W = OH*OW): that is what
the dispatch computes, and the only form the op still has.
"""

from __future__ import annotations

from ...lazy_import import lazy_module

from .affine import sum_or_none
from .aggregates import describe_softmax
from .contraction import classify_contraction
from .conv import classify_folded_conv, classify_interface_conv
from .structured_op import FREE_BODY_OPS, StructuredOp
from .types import KINDS, OpDescription, TensorInfo, dtype_nbytes, tensor_info

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

__all__ = ["KINDS", "OpDescription", "TensorInfo", "describe_linalg_op", "dtype_nbytes", "tensor_info"]


def _is_permutation_op(op: StructuredOp) -> bool:
    return all(m.is_permutation for m in op.maps)


def _converts_only(o: StructuredOp) -> bool:
    """A body that only converts element types (a cast, e.g. f32 -> f16)."""
    ops = [n for n in o.body_ops if n != "linalg.yield"]
    return bool(ops) and all(n in FREE_BODY_OPS for n in ops) and not o.yields_input_only()


def describe_linalg_op(op: ir.Operation | ir.OpView) -> OpDescription | None:
    """Describe one linalg structured op; None for anything else."""
    from iree.compiler.dialects import linalg  # here: its op DSL costs the app's start half a second
    opview = op.opview if isinstance(op, ir.Operation) else op
    name = opview.operation.name
    if not name.startswith("linalg.") or name == "linalg.yield":
        return None
    if name == "linalg.softmax":  # no indexing maps: an aggregate op
        return describe_softmax(opview.operation)
    try:
        maps_attr = linalg.get_indexing_maps(opview)
    except (TypeError, ValueError):
        return None
    if maps_attr is None or len(maps_attr) == 0:
        return None
    o = StructuredOp(opview, maps_attr)
    if len(o.maps) != len(o.types):
        return None

    kind = "other"
    dims: dict[str, int | None] = {}
    names = tuple("" for _ in range(o.n_loops))
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    groups: int | None = None
    flops = o.flops()

    conv = None
    if linalg.isa_convolution_op(opview):
        conv = classify_interface_conv(o, opview)
    elif not linalg.isa_contraction_op(opview):
        conv = classify_folded_conv(o)
    if conv is not None:
        kind, dims, names, groups, strides, dilations = conv
    elif linalg.isa_contraction_op(opview):
        res = classify_contraction(o, opview)
        if res is not None:
            kind, dims, names = res
    elif "reduction" in o.iterators:
        kind = "reduction"
    elif o.yields_input_only():
        kind = "copy/transpose" if _is_permutation_op(o) else "other"
    elif o.yields_extract():
        kind = "gather"
    elif flops or _converts_only(o):
        kind = "elementwise"

    bytes_read = sum_or_none(t.nbytes for t in o.inputs)
    bytes_written = sum_or_none(t.nbytes for t in o.outputs)
    return OpDescription(
        op_name=name,
        kind=kind,
        dims=dims,
        strides=tuple(strides),
        dilations=tuple(dilations),
        groups=groups,
        loop_ranges=o.ranges,
        iterator_types=o.iterators,
        loop_dims=names,
        inputs=o.inputs,
        outputs=o.outputs,
        flops=flops,
        bytes_read=bytes_read,
        bytes_written=bytes_written,
        body_ops=tuple(n for n in o.body_ops if n not in FREE_BODY_OPS),
        body_types=o.body_types,
    )
