"""What each NPU dispatch computes, in a form the plugin's C interpreter runs (the compute sections of
`npu/hal/npu_program.npub`, exec_binary).

The in-process mode hands each plugin call to the Python functional
model, which reads the dispatch's flow function through MLIR's bindings.
The standalone mode (`iree-run-module`, `iree-benchmark-module`) has no
Python behind the plugin: its C interpreter (plugin_src/npu_exec.c) reads
the program binary instead. `exec_lower` derives it from the same objects
the Python model uses (`linalg_eval.structured`, `dispatch_eval.root_op`
and `epilogue`, the output stage's `split_epilogue`), so the two models
compute one thing.

Per dispatch: its values (the function's bindings, then every op result:
element type and shape), its ops in order, which op is the root tiled in
the NPU program's task order and which fused elementwise ops run on each
finished output tile, and the tiles. A linalg op carries its iteration
domain, iterator types, one linear indexing map per operand (rows of
loop coefficients and a constant) and its body as a small SSA list
(`BodyOp`). A dispatch the C interpreter cannot run has `reason` set.
"""

from __future__ import annotations

from dataclasses import dataclass

FILE = "npu_program.npub"
ENV_PATH = "NPU_STUDIO_NPU_EXEC"  # the program binary the plugin's standalone mode runs
ENV_LOG = "NPU_STUDIO_NPU_LOG"  # a file: one line per call (call, dispatch, tiles, seconds)
ENV_DUMP = "NPU_STUDIO_NPU_DUMP"  # a folder: each call's operands and results kept for the per-dispatch check
ENV_FAULT = "NPU_STUDIO_NPU_FAULT"  # "DISPATCH:TILE:DELTA": add DELTA to one root tile's output (tests)
MAX_RANK = 8
MAX_LOOPS = 16
ELEMENTS = ("f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "index")
FUNC_OPS = ("load", "store", "empty", "const", "reshape", "extract_slice", "insert_slice", "pad", "linalg",
            "softmax", "scalar")


@dataclass(frozen=True)
class Value:
    element: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class BodyOp:
    """One SSA op of a body: its value is numbered after the block's arguments and earlier ops.

    op: an `arith`/`math` op name, or `const` (value in f or i), `index` (loop `attr`),
    `outer` (the rank-0 function value `attr`), `extract` (the element of the function value `attr`
    at the indices `args`: a gather). attr also holds cmpf/cmpi predicates.
    round: the output stage's rounding of a round op; saturate: the stage's narrowing.
    """

    op: str
    args: tuple[int, ...]
    type: str
    attr: int = 0
    f: str = ""  # a float constant as float.hex() ("inf", "nan" included)
    i: int = 0
    round: str = ""
    saturate: bool = False


@dataclass(frozen=True)
class FuncOp:
    op: str  # one of FUNC_OPS
    args: tuple[int, ...] = ()  # value ids
    results: tuple[int, ...] = ()
    binding: int = -1  # load/store
    offsets: tuple[int, ...] = ()  # slices; pad: low
    sizes: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    data: str = ""  # const: base64 of the little-endian elements
    splat: bool = False
    n_in: int = 0  # linalg: inputs first, then outputs
    maps: tuple[tuple[tuple[int, ...], ...], ...] = ()  # per operand, per dim: loop coefficients + constant
    reduction: tuple[bool, ...] = ()
    ranges: tuple[int, ...] = ()
    body: tuple[BodyOp, ...] = ()  # linalg, scalar
    yields: tuple[int, ...] = ()
    dim: int = 0  # softmax


@dataclass(frozen=True)
class ExecDispatch:
    dispatch: int  # the import npu_dispatch_<dispatch>
    symbol: str
    reason: str  # why the C interpreter cannot run it ("" when it can)
    bindings: int  # values 0..bindings-1 are the function's arguments
    values: tuple[Value, ...] = ()
    ops: tuple[FuncOp, ...] = ()
    root: int = -1  # op index run tile by tile; -1: the whole function at once
    epilogue: tuple[int, ...] = ()
    tile_offsets: tuple[tuple[int, ...], ...] = ()
    tile_sizes: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class ExecProgram:
    dispatches: tuple[ExecDispatch, ...]

    def of(self, dispatch: int) -> ExecDispatch | None:
        return next((d for d in self.dispatches if d.dispatch == dispatch), None)


def check(d: ExecDispatch) -> str:
    """What is out of bounds in `d` ("" when nothing): ids, ranks, element types, op kinds."""
    n = len(d.values)
    if not 0 <= d.bindings <= n:
        return f"bindings {d.bindings} outside its {n} values"
    for v in d.values:
        if v.element not in ELEMENTS or len(v.shape) > MAX_RANK or any(s < 0 for s in v.shape):
            return f"value {v} has an unknown element type, a rank over {MAX_RANK} or a negative size"
    for k, op in enumerate(d.ops):
        if op.op not in FUNC_OPS:
            return f"ops[{k}]: unknown op {op.op!r}"
        if any(not 0 <= v < n for v in (*op.args, *op.results)):
            return f"ops[{k}]: a value id outside 0..{n - 1}"
        if len(op.ranges) > MAX_LOOPS or any(len(row) != len(op.ranges) + 1 for m in op.maps for row in m):
            return f"ops[{k}]: indexing maps do not match its {len(op.ranges)} loops"
    if not -1 <= d.root < len(d.ops) or any(not 0 <= e < len(d.ops) for e in d.epilogue):
        return "root or epilogue op outside the ops"
    if len(d.tile_offsets) != len(d.tile_sizes):
        return "tile offsets and sizes differ in count"
    return ""
