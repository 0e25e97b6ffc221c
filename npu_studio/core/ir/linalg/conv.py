"""Convolutions and poolings: by MLIR's convolution interface, or structurally when
IREE folded a splat filter into the op's body (see the package docstring)."""

from __future__ import annotations

from ...lazy_import import lazy_module

from .affine import affine_terms, prod_or_none, pure_dim, pure_positions
from .structured_op import StructuredOp

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

_SPATIAL_NAMES = {
    1: (("W",), ("KW",), ("OW",)),
    2: (("H", "W"), ("KH", "KW"), ("OH", "OW")),
    3: (("D", "H", "W"), ("KD", "KH", "KW"), ("OD", "OH", "OW")),
}


def _conv_from_roles(
    op: StructuredOp,
    image_input: int,
    batch: list[int],
    depth: list[int],
    in_ch: list[int],
    out_ch: list[int],
    out_img: list[int],
    window: list[int],
    strides: list[int],
    dilations: list[int],
    kind: str,
) -> tuple[dict, tuple[str, ...], int | None]:
    rng = op.ranges
    n_spatial = max(len(out_img), len(window), 1)
    n_spatial = min(n_spatial, 3)
    in_names, k_names, o_names = _SPATIAL_NAMES[n_spatial]
    names = [""] * op.n_loops
    dims: dict[str, int | None] = {}
    dims["N"] = prod_or_none(rng[d] for d in batch) if batch else 1
    for d in batch:
        names[d] = "N"
    groups = prod_or_none(rng[d] for d in depth) if depth else None
    c_per_group = prod_or_none(rng[d] for d in in_ch) if in_ch else 1
    f_per_group = prod_or_none(rng[d] for d in out_ch) if out_ch else 1
    g = groups if depth else 1
    dims["C"] = None if g is None or c_per_group is None else g * c_per_group
    # input image sizes from the image input's shape
    img_in: list[int | None] = []
    shape = op.types[image_input].shape
    for o in out_img:
        size = None
        for j, e in enumerate(op.maps[image_input].results):
            terms = affine_terms(e) or []
            if any(d == o for d, _ in terms) and j < len(shape):
                size = shape[j]
                break
        img_in.append(size)
    pad = n_spatial - len(out_img)
    img_in = [1] * pad + img_in
    out_sizes = [1] * pad + [rng[d] for d in out_img]
    k_sizes = [1] * (n_spatial - len(window)) + [rng[d] for d in window]
    for name, v in zip(in_names, img_in):
        dims[name] = v
    dims["F"] = None if g is None or f_per_group is None else g * f_per_group
    for name, v in zip(k_names, k_sizes):
        dims[name] = v
    for name, v in zip(o_names, out_sizes):
        dims[name] = v
    if depth:
        dims["G"] = groups
    for d in in_ch:
        names[d] = "C"
    for d in out_ch:
        names[d] = "F"
    for d in depth:
        names[d] = "G"
    for name, d in zip(o_names[n_spatial - len(out_img) :], out_img):
        names[d] = name
    for name, d in zip(k_names[n_spatial - len(window) :], window):
        names[d] = name
    return dims, tuple(names), groups


def classify_interface_conv(op: StructuredOp, opview: ir.OpView):
    from iree.compiler.dialects import linalg  # loaded by describe_linalg_op already

    cd = linalg.infer_convolution_dimensions(opview)
    if cd is None:
        return None
    batch, depth = list(cd.batch), list(cd.depth)
    in_ch, out_ch = list(cd.input_channel), list(cd.output_channel)
    out_img, window = list(cd.output_image), list(cd.filter_loop)
    strides, dilations = list(cd.strides), list(cd.dilations)
    filter_unused = op.n_in >= 2 and not op.uses_block_arg(1)
    if filter_unused and op.multiplies_by_constant() and not op.name.startswith("linalg.pooling_"):
        # IREE folded a splat filter into the body; the window operand only
        # carries the window shape. Same maths as a scaled sum pool.
        kind = "depthwise_conv" if not in_ch else "conv"
        if not in_ch and not depth:
            batch, depth = batch[:-1], batch[-1:]
    elif op.name.startswith("linalg.pooling_") or filter_unused or (
        not in_ch and not out_ch and not depth
    ):
        kind = "pooling"
        # pooling reports its channel loop as a batch loop: the last one is C
        batch, depth = batch[:-1], batch[-1:]
        in_ch, out_ch = [], []
    elif depth and (not in_ch or all(op.ranges[d] == 1 for d in in_ch)):
        kind = "depthwise_conv"
    else:
        kind = "conv"
    dims, names, groups = _conv_from_roles(
        op, 0, batch, depth, in_ch, out_ch, out_img, window, strides, dilations, kind
    )
    if kind == "pooling":
        dims.pop("G", None)
        dims.pop("F", None)
        groups = None
        names = tuple("C" if n == "G" else n for n in names)
    return kind, dims, names, groups, tuple(strides), tuple(dilations)


def classify_folded_conv(op: StructuredOp):
    """Conv whose splat filter IREE folded into the body, or a generic pooling."""
    if "reduction" not in op.iterators or op.n_in < 1:
        return None
    # The image input: the data input that reduction loops index.
    red = {d for d, it in enumerate(op.iterators) if it == "reduction"}
    candidates = []
    for i in range(op.n_in):
        used = {d for e in op.maps[i].results for d, _ in (affine_terms(e) or [])}
        if used & red:
            candidates.append(i)
    if not candidates:
        return None
    image = candidates[0]
    if len(candidates) > 1:
        # a second input indexed by reductions that is read is a real filter
        # or a real reduction operand (e.g. a dot product) - not our case
        if any(op.uses_block_arg(i) for i in candidates[1:]):
            return None
    out_loops = {d for m in op.maps[op.n_in :] for e in m.results for d, _ in (affine_terms(e) or [])}
    in_loops: set[int] = set()
    for i in range(op.n_in):
        for e in op.maps[i].results:
            for d, _ in affine_terms(e) or []:
                in_loops.add(d)
    window: list[int] = []
    out_img: list[int] = []
    strides: list[int] = []
    dilations: list[int] = []
    in_ch: list[int] = []
    shared_pure: list[int] = []
    for e in op.maps[image].results:
        terms = affine_terms(e)
        if terms is None:
            return None
        par = [(d, c) for d, c in terms if d not in red]
        rd = [(d, c) for d, c in terms if d in red]
        if len(terms) == 1 and terms[0][1] == 1:
            d = terms[0][0]
            (in_ch if d in red else shared_pure).append(d)
            continue
        if len(par) > 1 or len(rd) > 1:
            return None
        if par:
            out_img.append(par[0][0])
            strides.append(par[0][1])
        if rd:
            window.append(rd[0][0])
            dilations.append(rd[0][1])
            if not par:
                return None
        elif par:
            dilations.append(1)
    if len(window) != len(out_img) and window:
        return None
    out_ch = [d for d in range(op.n_loops) if d in out_loops and d not in in_loops]
    has_mul = op.multiplies_by_constant()
    if has_mul:
        # a folded filter: something must look like a convolution
        if not (out_ch or window):
            return None
    elif not window or in_ch or out_ch:
        return None
    # order shared parallel loops as the output sees them
    out_order = [
        pure_dim(e) for e in op.maps[op.n_in].results if pure_dim(e) is not None
    ] if len(op.maps) > op.n_in else []
    shared = [d for d in out_order if d in shared_pure]
    group = _group_loop(op, image, shared, in_ch, out_ch)
    shared = [d for d in shared if d not in group]
    if not out_img:
        # 1x1 convolution: the image loops are the shared loops behind the
        # input channel (NCHW), else the trailing shared loops (NHWC)
        behind = _behind_channel(op, image, shared, in_ch)
        img_pool = behind or shared
        n_img = min(2, len(img_pool))
        out_img = img_pool[len(img_pool) - n_img :]
        shared = [d for d in shared if d not in out_img]
        strides = [1] * len(out_img)
        dilations = [1] * len(out_img)
    if in_ch or out_ch:
        kind = "conv"
        batch, depth = shared, group
    elif has_mul:
        kind = "depthwise_conv"
        depth = shared[-1:]
        batch = shared[:-1]
    else:
        kind = "pooling"
        depth = shared[-1:]
        batch = shared[:-1]
    dims, names, groups = _conv_from_roles(
        op, image, batch, depth, in_ch, out_ch, out_img, window, strides, dilations, kind
    )
    if kind == "pooling":
        dims.pop("G", None)
        dims.pop("F", None)
        groups = None
        names = tuple("C" if n == "G" else n for n in names)
    n_sp = len(out_img)
    pad = max(0, min(max(n_sp, 1), 3) - n_sp)
    return (
        kind,
        dims,
        names,
        groups,
        tuple([1] * pad + strides),
        tuple([1] * pad + dilations),
    )


def _group_loop(op: StructuredOp, image: int, shared: list[int], in_ch: list[int], out_ch: list[int]) -> list[int]:
    """The group loop of a folded-filter grouped convolution, if any ([] or [d]).

    With the filter folded away, a group loop and an image loop are both
    plain loops shared by input and output; only their positions differ.
    IREE expands a grouped convolution's channel dimension C into (G, C/G)
    and F into (G, F/G), so the group loop sits directly in front of the
    input-channel loop in the image input and directly in front of the
    output-channel loop in the output. Image loops index the spatial
    positions after (NCHW) or before (NHWC) the channel block.

    Caveat: a batch loop of an ungrouped NCHW 1x1 convolution with a folded
    filter sits in the same place and is structurally the same thing; IREE
    drops a unit batch, so this only matters for batch > 1.
    """
    if not in_ch or not out_ch or len(op.maps) <= op.n_in:
        return []
    in_pos = pure_positions(op.maps[image])
    out_pos = pure_positions(op.maps[op.n_in])
    c_first = min((in_pos[d] for d in in_ch if d in in_pos), default=None)
    f_first = min((out_pos[d] for d in out_ch if d in out_pos), default=None)
    if c_first is None or f_first is None:
        return []
    for d in shared:
        if in_pos.get(d) == c_first - 1 and out_pos.get(d) == f_first - 1:
            return [d]
    return []


def _behind_channel(op: StructuredOp, image: int, shared: list[int], in_ch: list[int]) -> list[int]:
    """Shared loops the image input indexes after its input-channel loops."""
    if not in_ch:
        return []
    pos = pure_positions(op.maps[image])
    last = max((pos[d] for d in in_ch if d in pos), default=None)
    if last is None:
        return []
    return [d for d in shared if pos.get(d, -1) > last]
