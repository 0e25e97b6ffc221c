"""The NPU program: dispatches, buffers and tasks; its JSON form.

`NpuProgram` is what the pass pipeline produces and what both textual
forms (this JSON, `npu_dialect`'s MLIR) hold. docs/npu-ir.schema.json is
the JSON Schema of `to_json`. Dynamic loop extents are -1.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...errors import StudioError
from ...textio import typed, without_gc
from ..target.target import NpuTarget


class NpuError(StudioError):
    """The NPU pipeline rejected the model (strict mode) or failed; `path` is the flow snapshot.

    Strict mode lists every reason, one per line of `message`; the one-line
    form joins them with '; '.
    """

    def __init__(self, message: str, path: str | Path | None = None, *, line: int | None = None,
                 col: int | None = None):
        super().__init__(path, "; ".join(ln.strip() for ln in str(message).splitlines() if ln.strip()),
                         line=line, col=col)
        self.message = message

VERSION = 1
PLACEMENTS = ("dram", "sram")
BUFFER_KINDS = ("input", "output", "weight", "intermediate", "constant", "tile")
STEP_KINDS = ("dma_in", "compute", "dma_out", "dma_copy", "cpu")
UNITS = ("mac", "vector", "dma", "cpu")
STEP_LIMIT = 1 << 40  # bytes or operations of one step (a TiB)
MAX_STEPS = 1 << 22  # steps of a whole program: STEP_LIMIT * MAX_STEPS stays inside int64
TRANSFER_OP = "npu.transfer"  # a data-movement dispatch's one task: DRAM to DRAM, no SRAM


def _lists(x: Any) -> Any:
    """Tuples as lists, all the way down (the JSON data model)."""
    if isinstance(x, dict):
        return {k: _lists(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_lists(v) for v in x]
    return x


@dataclass(frozen=True)
class Buffer:
    id: str
    size: int  # bytes
    dtype: str
    shape: tuple[int, ...]
    placement: str  # dram | sram
    offset: int
    kind: str
    live: tuple[int, int]  # [first, last + 1) in schedule positions

    @classmethod
    def from_dict(cls, d: dict) -> "Buffer":
        return cls(d["id"], d["size"], d["dtype"], tuple(d["shape"]), d["placement"],
                   d["offset"], d["kind"], tuple(d["live"]))


@dataclass(frozen=True)
class Step:
    kind: str  # dma_in | compute | dma_out | dma_copy | cpu
    srcs: tuple[str, ...]
    dsts: tuple[str, ...]
    bytes: int = 0  # moved (DMA); dma_copy (DRAM to DRAM): bytes read + bytes written
    ops: int = 0  # multiply-accumulates or element operations (compute)

    @classmethod
    def from_dict(cls, d: dict) -> "Step":
        return cls(d["kind"], tuple(d["srcs"]), tuple(d["dsts"]), d["bytes"], d["ops"])


@dataclass(frozen=True)
class Task:
    id: int
    dispatch: int
    op: str  # npu.conv, npu.matmul, ..., npu.fallback
    fallback: bool
    tile_offsets: tuple[int, ...]  # per loop of the dispatch
    tile_sizes: tuple[int, ...]
    steps: tuple[Step, ...]
    deps: tuple[int, ...]

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(d["id"], d["dispatch"], d["op"], d["fallback"], tuple(d["tile_offsets"]),
                   tuple(d["tile_sizes"]), tuple(Step.from_dict(s) for s in d["steps"]),
                   tuple(d["deps"]))


@dataclass(frozen=True)
class DispatchInfo:
    index: int
    symbol: str  # the flow.executable.export it calls
    location: str  # source location (ONNX node names)
    kind: str  # the dispatch index's kind: the root op's, or the data it moves ("none": neither)
    op_name: str  # root op, e.g. linalg.generic
    legal: bool
    reason: str  # why not legal ("" when legal)
    loop_dims: tuple[str, ...]
    loop_ranges: tuple[int, ...]  # -1 for dynamic
    iterator_types: tuple[str, ...]
    tile_sizes: tuple[int, ...]  # () for fallback dispatches
    loop_order: tuple[int, ...]  # loop indices, outermost first
    num_tiles: int
    sram_bytes: int  # double-buffered tile working set
    inputs: tuple[str, ...]  # DRAM buffer ids read
    outputs: tuple[str, ...]  # DRAM buffer ids written
    deps: tuple[int, ...]  # dispatches whose results this one reads
    # Issue 11: where it runs and why not.
    unit: str = "cpu"  # mac | vector | dma | cpu
    rule: str = ""  # id of the failed rule (the backend's rules), "" when legal
    flops: int = 0  # the dispatch index's FLOPs of all its ops
    dims: dict = field(default_factory=dict)  # the dispatch index's named dims (M, N, K, ...)
    dtype: str = ""  # element type of the root op's first input
    acc_dtype: str = ""  # accumulator of a MAC op (f32 for f16 x f16)
    transposed: tuple[str, ...] = ()  # MAC operands read transposed
    transpose_by: str = ""  # dma | array (from the target) when any is
    vector_cost: int = 0  # vector-unit cycles per element (sum of its functions' costs)
    transfer: str = ""  # DMA transfer kind: copy | transpose | broadcast | insert | pad
    pad_value: str = ""  # value a padded transfer writes around the data
    transfer_read: int = 0  # bytes a DMA transfer reads (its dma_copy step moves read + written)
    # Issue 26: requantization chains the output stage computes (Requantization.to_dict each).
    requant: tuple[dict, ...] = ()
    epilogue: str = ""  # the fused ops in words: output stage, then vector-unit functions

    @classmethod
    def from_dict(cls, d: dict) -> "DispatchInfo":
        d = dict(d)
        for k in ("loop_dims", "loop_ranges", "iterator_types", "tile_sizes",
                  "loop_order", "inputs", "outputs", "deps", "transposed", "requant"):
            if k in d:
                d[k] = tuple(d[k])
        return cls(**d)

    def describe(self) -> str:
        if self.legal:
            return f"Dispatch #{self.index}: {self.kind} -> NPU {self.unit}"
        return f"Dispatch #{self.index} not supported: {self.reason}"


@dataclass(frozen=True)
class NpuProgram:
    target: NpuTarget
    dispatches: tuple[DispatchInfo, ...]
    buffers: tuple[Buffer, ...]
    tasks: tuple[Task, ...]
    sram_peak: int
    dram_peak: int
    version: int = VERSION
    source: str = field(default="", compare=False)

    # -- queries -----------------------------------------------------------
    def buffer(self, id: str) -> Buffer:
        return self._buffers()[id]

    def _buffers(self) -> dict[str, Buffer]:
        return {b.id: b for b in self.buffers}

    def tasks_of(self, dispatch: int) -> list[Task]:
        return [t for t in self.tasks if t.dispatch == dispatch]

    def dispatch_sram_peak(self, dispatch: int) -> int:
        bufs = self._buffers()
        ids = {b for t in self.tasks_of(dispatch) for s in t.steps for b in (*s.srcs, *s.dsts)}
        used = [bufs[i] for i in ids if bufs[i].placement == "sram"]
        return max((b.offset + b.size for b in used), default=0)

    def reasons(self) -> list[str]:
        return [d.describe() for d in self.dispatches if not d.legal]

    # -- JSON --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return _lists({
            "format": "npu-studio.npu-ir",
            "version": self.version,
            "target": self.target.to_dict(),
            "sram_peak": self.sram_peak,
            "dram_peak": self.dram_peak,
            "dispatches": [asdict(d) for d in self.dispatches],
            "buffers": [asdict(b) for b in self.buffers],
            "tasks": [asdict(t) for t in self.tasks],
        })

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NpuProgram":
        """The program `to_dict` wrote; ValueError naming the first field that is missing, of the
        wrong type or out of range (integers within JSON_INT_LIMIT, a step's bytes and ops within
        STEP_LIMIT, at most MAX_STEPS steps, so no sum of them leaves int64)."""
        if not isinstance(d, dict) or d.get("format") != "npu-studio.npu-ir":
            raise ValueError("not an NPU IR file (format != npu-studio.npu-ir)")
        if d.get("version") != VERSION:
            raise ValueError(f"NPU IR version {d.get('version')!r} not supported (want {VERSION})")
        missing = [k for k in ("target", "dispatches", "buffers", "tasks", "sram_peak", "dram_peak") if k not in d]
        if missing:
            raise ValueError(f"missing key {missing[0]!r}")
        tasks = typed(tuple[Task, ...], d["tasks"], "tasks")
        steps = sum(len(t.steps) for t in tasks)
        if steps > MAX_STEPS:
            raise ValueError(f"tasks: {steps:,} steps, more than the {MAX_STEPS:,} a program may have")
        for t in tasks:
            for s in t.steps:
                if not (0 <= s.bytes <= STEP_LIMIT and 0 <= s.ops <= STEP_LIMIT):
                    raise ValueError(f"task {t.id}: a step's bytes or ops ({s.bytes:,}, {s.ops:,}) is outside "
                                     f"0 to {STEP_LIMIT:,}")
        return cls(
            target=NpuTarget.from_dict(d["target"]),
            dispatches=typed(tuple[DispatchInfo, ...], d["dispatches"], "dispatches"),
            buffers=typed(tuple[Buffer, ...], d["buffers"], "buffers"),
            tasks=tasks,
            sram_peak=typed(int, d["sram_peak"], "sram_peak"),
            dram_peak=typed(int, d["dram_peak"], "dram_peak"),
            version=d["version"],
        )

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "NpuProgram":
        return cls.from_dict(json.loads(text))

    @classmethod
    @without_gc
    def load(cls, path: str | Path) -> "NpuProgram":
        """Read a model.npu.json; anything malformed is a BadFile naming `path`."""
        from ...errors import BadFile
        from ...textio import parse_json, read_bytes

        data = parse_json(read_bytes(path), path)
        try:
            return cls.from_dict(data)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
            raise BadFile(path, f"not a valid NPU IR file: {what}") from None

    def save_json(self, path: str | Path) -> None:
        from ...textio import write_output

        write_output(path, self.to_json())
