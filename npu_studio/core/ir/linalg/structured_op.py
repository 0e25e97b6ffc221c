"""The pieces of a linalg structured op the classifiers need: maps, operands, loops, body."""

from __future__ import annotations

from ...lazy_import import lazy_module

from .affine import affine_terms, prod_or_none, pure_dim
from .types import tensor_info

ir = lazy_module("iree.compiler.ir")  # loaded on first use: not at the app's start

# Body ops that do not count as arithmetic work.
FREE_BODY_OPS = frozenset(
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


class StructuredOp:
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
        # The float types the body computes in (an f16 multiply between f32 operands: truncf, mulf, extf)
        self.body_types = tuple(sorted({
            str(r.type) for o in (self.block.operations if self.block is not None else [])
            for r in o.results if str(r.type) in ("f16", "bf16", "f32", "f64")}))

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
                for d, _ in affine_terms(e) or []:
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
                d = pure_dim(e)
                if d is not None and not known[d] and j < len(info.shape):
                    ranges[d] = info.shape[j]
                    known[d] = True
        # Window loops seen only inside `s*o + k*d`: size from the input extent.
        for i in range(self.n_in):
            info = self.types[i]
            for j, e in enumerate(self.maps[i].results):
                terms = affine_terms(e)
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
        work = sum(1 for n in self.body_ops if n not in FREE_BODY_OPS)
        if work == 0:
            return 0
        total = prod_or_none(self.ranges)
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

    def yields_extract(self) -> bool:
        """The body yields an element read at computed indices (`tensor.extract`), maybe cast: a gather."""
        if self.block is None:
            return False
        ops = list(self.block.operations)
        if not ops or ops[-1].name != "linalg.yield":
            return False
        value = ops[-1].operands[0] if len(ops[-1].operands) == 1 else None
        while value is not None and not isinstance(value.owner, ir.Block):
            owner = value.owner
            if owner.name == "tensor.extract":
                return True
            value = owner.operands[0] if owner.name in FREE_BODY_OPS and len(owner.operands) == 1 else None
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
