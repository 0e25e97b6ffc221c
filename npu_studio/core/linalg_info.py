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

import math
from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.dialects import linalg

from . import dtypes

KINDS: tuple[str, ...] = (
    "conv",
    "depthwise_conv",
    "matmul",
    "batch_matmul",
    "pooling",
    "reduction",
    "elementwise",
    "softmax",
    "copy/transpose",
    "other",
)

# Body ops that do not count as arithmetic work.
_FREE_BODY_OPS = frozenset(
    {
        "linalg.yield",
        "linalg.index",
        "arith.constant",
        "arith.index_cast",
        "arith.index_castui",
        "arith.bitcast",
        # conversions are not arithmetic work either
        "arith.extf",
        "arith.truncf",
        "arith.extsi",
        "arith.extui",
        "arith.trunci",
        "arith.sitofp",
        "arith.uitofp",
        "arith.fptosi",
        "arith.fptoui",
    }
)
_MUL_OPS = frozenset({"arith.mulf", "arith.muli"})

_SPATIAL_NAMES = {
    1: (("W",), ("KW",), ("OW",)),
    2: (("H", "W"), ("KH", "KW"), ("OH", "OW")),
    3: (("D", "H", "W"), ("KD", "KH", "KW"), ("OD", "OH", "OW")),
}


@dataclass(frozen=True)
class TensorInfo:
    """Shape (None for a dynamic '?') and element type of one operand."""

    shape: tuple[int | None, ...]
    dtype: str

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int | None:
        n = self.num_elements
        if n is None:
            return None
        return n * dtype_nbytes(self.dtype)


@dataclass(frozen=True)
class OpDescription:
    op_name: str
    kind: str
    dims: dict[str, int | None]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int | None
    loop_ranges: tuple[int | None, ...]
    iterator_types: tuple[str, ...]
    loop_dims: tuple[str, ...]
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    flops: int | None
    bytes_read: int | None
    bytes_written: int | None
    # Arithmetic ops in the body, e.g. ("arith.mulf", "arith.addf"); used
    # for labels such as "relu" or "bias add" of fused ops.
    body_ops: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_static(self) -> bool:
        return all(r is not None for r in self.loop_ranges) and all(
            t.is_static for t in self.inputs + self.outputs
        )

    @property
    def dtype(self) -> str:
        """Element type of the first data input (of the output if none)."""
        for t in self.inputs:
            if t.shape:
                return t.dtype
        return self.outputs[0].dtype if self.outputs else ""


def dtype_nbytes(dtype: str) -> int:
    """Storage bytes of one element (the one table: core/dtypes.py)."""
    return dtypes.nbytes(dtype)


def tensor_info(t: ir.Type) -> TensorInfo:
    if isinstance(t, ir.ShapedType):
        if not t.has_rank:
            return TensorInfo((None,), str(t.element_type))
        shape = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
        return TensorInfo(shape, str(t.element_type))
    return TensorInfo((), str(t))


# ---------------------------------------------------------------- affine helpers


def _terms(expr: ir.AffineExpr) -> list[tuple[int, int]] | None:
    """`expr` as a list of (loop, coefficient), ignoring constant offsets.

    None for anything that is not a sum of `dN * const` terms.
    """
    if isinstance(expr, ir.AffineDimExpr):
        return [(expr.position, 1)]
    if isinstance(expr, ir.AffineConstantExpr):
        return []
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _terms(expr.lhs), _terms(expr.rhs)
        if lhs is None or rhs is None:
            return None
        return lhs + rhs
    if isinstance(expr, ir.AffineMulExpr):
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(b, ir.AffineConstantExpr):
                inner = _terms(a)
                if inner is None:
                    return None
                return [(d, c * b.value) for d, c in inner]
        return None
    return None


def _pure_dim(expr: ir.AffineExpr) -> int | None:
    return expr.position if isinstance(expr, ir.AffineDimExpr) else None


def _sum(values) -> int | None:
    values = list(values)
    if any(v is None for v in values):
        return None
    return sum(values)


def _prod(values) -> int | None:
    values = list(values)
    if any(v is None for v in values):
        return None
    return math.prod(values)


# ---------------------------------------------------------------- the op


class _Op:
    """The pieces of a structured op the classifiers need."""

    def __init__(self, opview: ir.OpView, maps_attr: ir.ArrayAttr):
        operation = opview.operation
        self.name = operation.name
        self.operation = operation
        self.maps = [ir.AffineMapAttr(a).value for a in maps_attr]
        operands = list(operation.operands)
        n_out = self._num_outputs(operation, len(operands))
        self.n_in = len(operands) - n_out
        self.types = [tensor_info(v.type) for v in operands]
        self.inputs = tuple(self.types[: self.n_in])
        self.outputs = tuple(self.types[self.n_in :])
        self.n_loops = self.maps[0].n_dims if self.maps else 0
        self.iterators = self._iterator_types()
        self.ranges = self._loop_ranges()
        self.block = None
        if operation.regions and len(operation.regions[0].blocks):
            self.block = operation.regions[0].blocks[0]
        self.body_ops = tuple(
            o.name for o in (self.block.operations if self.block is not None else [])
        )

    @staticmethod
    def _num_outputs(operation: ir.Operation, n_operands: int) -> int:
        if "operandSegmentSizes" in operation.attributes:
            sizes = list(ir.DenseI32ArrayAttr(operation.attributes["operandSegmentSizes"]))
            return sizes[-1]
        return max(1, len(operation.results)) if n_operands else 0

    def _iterator_types(self) -> tuple[str, ...]:
        attrs = self.operation.attributes
        if "iterator_types" in attrs:
            return tuple(
                "reduction" if "reduction" in str(a) else "parallel"
                for a in attrs["iterator_types"]
            )
        in_out: set[int] = set()
        for m in self.maps[self.n_in :]:
            for e in m.results:
                for d, _ in _terms(e) or []:
                    in_out.add(d)
        return tuple(
            "parallel" if i in in_out else "reduction" for i in range(self.n_loops)
        )

    def _loop_ranges(self) -> tuple[int | None, ...]:
        ranges: list[int | None] = [None] * self.n_loops
        known = [False] * self.n_loops
        # Outputs first: their indexing is exact.
        order = list(range(self.n_in, len(self.maps))) + list(range(self.n_in))
        for i in order:
            info = self.types[i]
            for j, e in enumerate(self.maps[i].results):
                d = _pure_dim(e)
                if d is not None and not known[d] and j < len(info.shape):
                    ranges[d] = info.shape[j]
                    known[d] = True
        # Window loops seen only inside `s*o + k*d`: size from the input extent.
        for i in range(self.n_in):
            info = self.types[i]
            for j, e in enumerate(self.maps[i].results):
                terms = _terms(e)
                if not terms or len(terms) < 2 or j >= len(info.shape):
                    continue
                unknown = [(d, c) for d, c in terms if not known[d]]
                if len(unknown) != 1 or info.shape[j] is None:
                    continue
                d, c = unknown[0]
                rest = [(dd, cc) for dd, cc in terms if dd != d]
                if any(ranges[dd] is None for dd, _ in rest):
                    continue
                span = sum(cc * (ranges[dd] - 1) for dd, cc in rest)
                ranges[d] = (info.shape[j] - 1 - span) // c + 1
                known[d] = True
        return tuple(ranges)

    def uses_block_arg(self, i: int) -> bool:
        if self.block is None or i >= len(self.block.arguments):
            return True
        return len(list(self.block.arguments[i].uses)) > 0

    def flops(self) -> int | None:
        work = sum(1 for n in self.body_ops if n not in _FREE_BODY_OPS)
        if work == 0:
            return 0
        total = _prod(self.ranges)
        return None if total is None else total * work

    def multiplies_by_constant(self) -> bool:
        """A multiply in the body with an operand that is not a block argument."""
        if self.block is None:
            return False
        for o in self.block.operations:
            if o.name in _MUL_OPS:
                for v in o.operands:
                    if not isinstance(v.owner, ir.Block):
                        return True
        return False

    def yields_input_only(self) -> bool:
        if self.block is None:
            return self.name in ("linalg.copy", "linalg.transpose", "linalg.broadcast")
        ops = list(self.block.operations)
        if len(ops) != 1:
            return False
        yielded = list(ops[0].operands)
        args = list(self.block.arguments)[: self.n_in]
        return all(any(v == a for a in args) for v in yielded)


# ---------------------------------------------------------------- classification


def _conv_from_roles(
    op: _Op,
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
    dims["N"] = _prod(rng[d] for d in batch) if batch else 1
    for d in batch:
        names[d] = "N"
    groups = _prod(rng[d] for d in depth) if depth else None
    c_per_group = _prod(rng[d] for d in in_ch) if in_ch else 1
    f_per_group = _prod(rng[d] for d in out_ch) if out_ch else 1
    g = groups if depth else 1
    dims["C"] = None if g is None or c_per_group is None else g * c_per_group
    # input image sizes from the image input's shape
    img_in: list[int | None] = []
    shape = op.types[image_input].shape
    for o in out_img:
        size = None
        for j, e in enumerate(op.maps[image_input].results):
            terms = _terms(e) or []
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


def _classify_interface_conv(op: _Op, opview: ir.OpView):
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


def _classify_folded_conv(op: _Op):
    """Conv whose splat filter IREE folded into the body, or a generic pooling."""
    if "reduction" not in op.iterators or op.n_in < 1:
        return None
    # The image input: the data input that reduction loops index.
    red = {d for d, it in enumerate(op.iterators) if it == "reduction"}
    candidates = []
    for i in range(op.n_in):
        used = {d for e in op.maps[i].results for d, _ in (_terms(e) or [])}
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
    out_loops = {d for m in op.maps[op.n_in :] for e in m.results for d, _ in (_terms(e) or [])}
    in_loops: set[int] = set()
    for i in range(op.n_in):
        for e in op.maps[i].results:
            for d, _ in _terms(e) or []:
                in_loops.add(d)
    window: list[int] = []
    out_img: list[int] = []
    strides: list[int] = []
    dilations: list[int] = []
    in_ch: list[int] = []
    shared_pure: list[int] = []
    for e in op.maps[image].results:
        terms = _terms(e)
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
        _pure_dim(e) for e in op.maps[op.n_in].results if _pure_dim(e) is not None
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


def _group_loop(op: _Op, image: int, shared: list[int], in_ch: list[int], out_ch: list[int]) -> list[int]:
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
    in_pos = _pure_positions(op.maps[image])
    out_pos = _pure_positions(op.maps[op.n_in])
    c_first = min((in_pos[d] for d in in_ch if d in in_pos), default=None)
    f_first = min((out_pos[d] for d in out_ch if d in out_pos), default=None)
    if c_first is None or f_first is None:
        return []
    for d in shared:
        if in_pos.get(d) == c_first - 1 and out_pos.get(d) == f_first - 1:
            return [d]
    return []


def _behind_channel(op: _Op, image: int, shared: list[int], in_ch: list[int]) -> list[int]:
    """Shared loops the image input indexes after its input-channel loops."""
    if not in_ch:
        return []
    pos = _pure_positions(op.maps[image])
    last = max((pos[d] for d in in_ch if d in pos), default=None)
    if last is None:
        return []
    return [d for d in shared if pos.get(d, -1) > last]


def _pure_positions(m: ir.AffineMap) -> dict[int, int]:
    """loop -> result position, for results that are a plain loop."""
    out: dict[int, int] = {}
    for j, e in enumerate(m.results):
        d = _pure_dim(e)
        if d is not None and d not in out:
            out[d] = j
    return out


def _classify_contraction(op: _Op, opview: ir.OpView):
    cd = linalg.infer_contraction_dimensions(opview)
    if cd is None:
        return None
    b, m, n, k = list(cd.batch), list(cd.m), list(cd.n), list(cd.k)
    r = op.ranges
    dims: dict[str, int | None] = {}
    if b:
        dims["B"] = _prod(r[d] for d in b)
    dims["M"] = _prod(r[d] for d in m) if m else 1
    dims["N"] = _prod(r[d] for d in n) if n else 1
    dims["K"] = _prod(r[d] for d in k) if k else 1
    names = [""] * op.n_loops
    for label, loops in (("B", b), ("M", m), ("N", n), ("K", k)):
        for d in loops:
            names[d] = label
    return ("batch_matmul" if b else "matmul"), dims, tuple(names)


def _is_permutation_op(op: _Op) -> bool:
    return all(m.is_permutation for m in op.maps)


def describe_linalg_op(op: ir.Operation | ir.OpView) -> OpDescription | None:
    """Describe one linalg structured op; None for anything else."""
    opview = op.opview if isinstance(op, ir.Operation) else op
    name = opview.operation.name
    if not name.startswith("linalg.") or name == "linalg.yield":
        return None
    if name == "linalg.softmax":  # no indexing maps: an aggregate op
        return _describe_softmax(opview.operation)
    try:
        maps_attr = linalg.get_indexing_maps(opview)
    except (TypeError, ValueError):
        return None
    if maps_attr is None or len(maps_attr) == 0:
        return None
    o = _Op(opview, maps_attr)
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
        conv = _classify_interface_conv(o, opview)
    elif not linalg.isa_contraction_op(opview):
        conv = _classify_folded_conv(o)
    if conv is not None:
        kind, dims, names, groups, strides, dilations = conv
    elif linalg.isa_contraction_op(opview):
        res = _classify_contraction(o, opview)
        if res is not None:
            kind, dims, names = res
    elif "reduction" in o.iterators:
        kind = "reduction"
    elif o.yields_input_only():
        kind = "copy/transpose" if _is_permutation_op(o) else "other"
    elif flops or _converts_only(o):
        kind = "elementwise"

    bytes_read = _sum(t.nbytes for t in o.inputs)
    bytes_written = _sum(t.nbytes for t in o.outputs)
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
        body_ops=tuple(n for n in o.body_ops if n not in _FREE_BODY_OPS),
    )


# ---------------------------------------------------------------- aggregates

# linalg.softmax decomposes into max, sub, exp, sum and div per element.
SOFTMAX_BODY_OPS = ("arith.maximumf", "arith.subf", "math.exp", "arith.addf", "arith.divf")


def _converts_only(o: _Op) -> bool:
    """A body that only converts element types (a cast, e.g. f32 -> f16)."""
    ops = [n for n in o.body_ops if n != "linalg.yield"]
    return bool(ops) and all(n in _FREE_BODY_OPS for n in ops) and not o.yields_input_only()


def _describe_softmax(operation: ir.Operation) -> OpDescription:
    x = tensor_info(operation.operands[0].type)
    y = tensor_info(operation.operands[-1].type)
    axis = ir.IntegerAttr(operation.attributes["dimension"]).value
    iterators = tuple("reduction" if i == axis else "parallel" for i in range(len(x.shape)))
    n = x.num_elements
    return OpDescription(
        op_name=operation.name,
        kind="softmax",
        dims={"axis": axis},
        strides=(),
        dilations=(),
        groups=None,
        loop_ranges=x.shape,
        iterator_types=iterators,
        loop_dims=tuple("R" if i == axis else f"d{i}" for i in range(len(x.shape))),
        inputs=(x,),
        outputs=(y,),
        flops=None if n is None else n * len(SOFTMAX_BODY_OPS),
        bytes_read=x.nbytes,
        bytes_written=y.nbytes,
        body_ops=SOFTMAX_BODY_OPS,
    )
