"""The NPU target description, loaded from a TOML file.

A target says what the NPU has (MAC array, vector unit, SRAM, DMA, DRAM
bandwidth, clock) and what it accepts (op kinds, element types, limits).
docs/npu-target.md documents the format; resources/targets/*.toml are
commented examples.

Errors name the file, the key and the line: `TargetError` carries all
three. tomllib reports no lines for values, so `key_line` finds the
key's line in the text itself.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ....resources import TARGETS_DIR as RESOURCES  # package data: also found inside a wheel
from ...errors import BadFile, StudioError
from ...textio import read_bytes
from .output_stage import NARROW_TYPES, ROUNDING_MODES, SCALE_MODES, OutputStage
from .cost_model import COST_TABLES, CostModel, parse_cost_model

DATAFLOWS = ("output-stationary", "weight-stationary")
DATAFLOW_SHORT = {"os": "output-stationary", "ws": "weight-stationary"}
OP_KINDS = (
    "conv", "depthwise_conv", "matmul", "batch_matmul", "pooling",
    "reduction", "elementwise", "softmax", "copy/transpose",
)
# Element types a target may name; their sizes come from core/dtypes.py.
DTYPES = ("i1", "i8", "ui8", "i16", "i32", "i64", "f8E4M3FN", "f8E5M2", "f16", "bf16", "f32", "f64")
TRANSPOSE_BY = ("dma", "array", "none")
# Vector-unit functions a target may list (cycles per element each); see
# rules.vector_functions for the body ops each one stands for.
VECTOR_FUNCTIONS = ("add", "sub", "mul", "div", "max", "min", "compare", "select", "neg", "abs",
                    "exp", "log", "tanh", "logistic", "sqrt", "rsqrt", "pow", "erf", "floor",
                    "round", "and", "or", "xor", "shift",
                    # issue 26: math.roundeven, and the int <-> float casts of (de)quantization
                    "roundeven", "itof", "ftoi",
                    # a load at a computed index from a tensor held whole in SRAM (Resize)
                    "gather")
_BASIC_FUNCTIONS = {"add": 1, "sub": 1, "mul": 1, "max": 1, "min": 1, "compare": 1, "select": 1}


class TargetError(StudioError, ValueError):
    """An invalid target file: `file:line: key: reason`."""

    def __init__(self, path: str | Path, key: str, line: int | None, reason: str):
        super().__init__(path, f"{key}: {reason}", line=line or None)
        self.path = str(self.path)
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class NpuTarget:
    name: str
    clock_mhz: int
    mac_rows: int
    mac_cols: int
    dataflow: str
    vector_lanes: int
    sram_bytes: int
    sram_banks: int
    dram_bytes_per_cycle: int
    dma_channels: int
    op_kinds: tuple[str, ...]
    dtypes: tuple[str, ...]
    max_rank: int
    max_dim_size: int
    # Issue 11 (op coverage): what the NPU can do beyond plain kinds and dtypes.
    acc_dtypes: tuple[str, ...] = ()  # wider accumulators of MAC ops (f16 x f16 -> f32)
    dma_strided: bool = False  # DMA descriptors with strides (transposes, slices, inserts)
    dma_padded: bool = False  # DMA writes a pad value around a transfer
    transpose_by: str = "none"  # who transposes a MAC operand: dma | array | none
    vector_functions: tuple[tuple[str, int], ...] = tuple(sorted(_BASIC_FUNCTIONS.items()))
    # Timing-only keys (optional in the file; older model.npu.json files lack them).
    dma_setup_cycles: int = 64
    cpu_launch_cycles: int = 2000
    cpu_ops_per_cycle: int = 16
    # Issue 26 (integer path): the MAC array's requantization stage and its
    # MACs per processing element per cycle by input type (1 when not listed).
    output_stage: OutputStage = OutputStage()
    macs_per_cycle: tuple[tuple[str, int], ...] = ()
    # Issue 30: energy and area (cost_model.py), optional tables [energy], [area], [technology].
    cost: CostModel = CostModel()
    # Issue 38: the backend (npu_studio.backends entry point) whose rules and costs apply, and
    # the values of its own keys (`Backend.target_keys`), by dotted key.
    backend: str = "generic"
    backend_values: tuple[tuple[str, Any], ...] = ()
    source: str = field(default="", compare=False)

    def backend_value(self, key: str) -> Any:
        """The value of one of the backend's own keys (its default when the file lacks it)."""
        return dict(self.backend_values)[key]

    def function_cost(self, name: str) -> int | None:
        """Cycles per element of a vector function, None if the unit lacks it."""
        return dict(self.vector_functions).get(name)

    def mac_rate(self, dtype: str) -> int:
        """MACs one processing element does per cycle on inputs of `dtype`."""
        return dict(self.macs_per_cycle).get(dtype, 1)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("source")
        d["op_kinds"] = list(self.op_kinds)
        d["dtypes"] = list(self.dtypes)
        d["acc_dtypes"] = list(self.acc_dtypes)
        d["vector_functions"] = dict(self.vector_functions)
        d["output_stage"] = self.output_stage.to_dict()
        d["macs_per_cycle"] = dict(self.macs_per_cycle)
        d["cost"] = self.cost.to_dict()
        if self.cost == CostModel():  # files written before issue 30 stay as they were
            del d["cost"]
        d["backend_values"] = dict(self.backend_values)
        if self.backend == "generic" and not self.backend_values:  # and before issue 38
            del d["backend"], d["backend_values"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NpuTarget":
        """The target as `to_dict` wrote it; ValueError for a value out of its range (INT_RANGES)."""
        if not isinstance(d, dict):
            raise ValueError(f"target: expected an object, got {type(d).__name__}")
        for name, (key, factor) in FIELD_KEYS.items():
            if name in d:
                problem = range_problem(key, d[name], factor)
                if problem:
                    raise ValueError(f"target.{name}: {problem}")
        for name, cost in dict(d.get("vector_functions", {})).items():
            problem = range_problem("vector.functions.*", cost)
            if problem:
                raise ValueError(f"target.vector_functions.{name}: {problem}")
        d = dict(d)
        d["op_kinds"] = tuple(d["op_kinds"])
        d["dtypes"] = tuple(d["dtypes"])
        d["acc_dtypes"] = tuple(d.get("acc_dtypes", ()))
        if "vector_functions" in d:
            d["vector_functions"] = tuple(sorted(dict(d["vector_functions"]).items()))
        d["output_stage"] = OutputStage.from_dict(d.get("output_stage"))
        d["macs_per_cycle"] = tuple(sorted(dict(d.get("macs_per_cycle", {})).items()))
        if "cost" in d:
            d["cost"] = CostModel.from_dict(d["cost"])
        d["backend_values"] = tuple(sorted(dict(d.get("backend_values", {})).items()))
        return cls(**d)


# Every integer key's accepted range (inclusive), checked at load for a TOML file and for the
# target inside a model.npu.json; docs/npu-target.md lists them. A new integer key joins here
# and uses `_in_range(key)` in _SCHEMA (tests/core/test_target_ranges.py checks that all do).
INT_RANGES: dict[str, tuple[int, int]] = {
    "clock_mhz": (1, 100_000),
    "mac_array.rows": (1, 4096),
    "mac_array.cols": (1, 4096),
    "vector.lanes": (1, 65_536),
    "sram.size_kib": (1, 1 << 24),  # 16 GiB
    "sram.banks": (1, 1024),
    "dram.bytes_per_cycle": (1, 65_536),
    "dma.channels": (1, 64),
    "dma.setup_cycles": (0, 1_000_000),
    "cpu.launch_cycles": (0, 100_000_000),
    "cpu.ops_per_cycle": (1, 65_536),
    "limits.max_rank": (1, 16),
    "limits.max_dim_size": (1, (1 << 31) - 1),
    "vector.functions.*": (1, 1_000_000),  # cycles per element of each function
}
# NpuTarget field -> (its key in the TOML file, the factor from the file's unit to the field's)
FIELD_KEYS: dict[str, tuple[str, int]] = {
    "clock_mhz": ("clock_mhz", 1), "mac_rows": ("mac_array.rows", 1), "mac_cols": ("mac_array.cols", 1),
    "vector_lanes": ("vector.lanes", 1), "sram_bytes": ("sram.size_kib", 1024), "sram_banks": ("sram.banks", 1),
    "dram_bytes_per_cycle": ("dram.bytes_per_cycle", 1), "dma_channels": ("dma.channels", 1),
    "max_rank": ("limits.max_rank", 1), "max_dim_size": ("limits.max_dim_size", 1),
    "dma_setup_cycles": ("dma.setup_cycles", 1), "cpu_launch_cycles": ("cpu.launch_cycles", 1),
    "cpu_ops_per_cycle": ("cpu.ops_per_cycle", 1),
}


def range_problem(key: str, value: Any, factor: int = 1) -> str | None:
    """Why `value` is not an accepted integer for `key` (None when it is)."""
    lo, hi = INT_RANGES[key]
    lo, hi = lo * factor, hi * factor
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected an integer from {lo:,} to {hi:,}, got {value!r}"
    if not lo <= value <= hi:
        return f"{value:,} is out of range: expected an integer from {lo:,} to {hi:,}"
    return None


def _in_range(key: str) -> tuple[Any, str]:
    lo, hi = INT_RANGES[key]
    return (lambda v: lo <= v <= hi), f"an integer from {lo:,} to {hi:,}"


class TargetKey(NamedTuple):
    """One key of a target TOML: checked at load, `file:line: key: reason` when wrong."""

    key: str  # dotted: `table.key`
    type: type
    required: bool
    default: Any
    check: Callable[[Any], bool]
    want: str  # what the check wants, for the reason: "an integer from 1 to 64"


_Check = TargetKey
_SCHEMA: tuple[_Check, ...] = tuple(TargetKey(*k) for k in (
    ("name", str, True, None, lambda v: bool(v), "a non-empty string"),
    ("clock_mhz", int, True, None, *_in_range("clock_mhz")),
    ("mac_array.rows", int, True, None, *_in_range("mac_array.rows")),
    ("mac_array.cols", int, True, None, *_in_range("mac_array.cols")),
    ("mac_array.dataflow", str, False, "output-stationary",
     lambda v: v in DATAFLOWS or v in DATAFLOW_SHORT,
     "one of " + ", ".join(DATAFLOWS + tuple(DATAFLOW_SHORT))),
    ("vector.lanes", int, True, None, *_in_range("vector.lanes")),
    ("sram.size_kib", int, True, None, *_in_range("sram.size_kib")),
    ("sram.banks", int, False, 1, *_in_range("sram.banks")),
    ("dram.bytes_per_cycle", int, True, None, *_in_range("dram.bytes_per_cycle")),
    ("dma.channels", int, True, None, *_in_range("dma.channels")),
    ("dma.setup_cycles", int, False, 64, *_in_range("dma.setup_cycles")),
    ("cpu.launch_cycles", int, False, 2000, *_in_range("cpu.launch_cycles")),
    ("cpu.ops_per_cycle", int, False, 16, *_in_range("cpu.ops_per_cycle")),
    ("ops.supported", list, True, None,
     lambda v: bool(v) and all(isinstance(k, str) and k in OP_KINDS for k in v),
     "a non-empty list of: " + ", ".join(OP_KINDS)),
    ("dtypes.supported", list, True, None,
     lambda v: bool(v) and all(isinstance(k, str) and k in DTYPES for k in v),
     "a non-empty list of: " + ", ".join(DTYPES)),
    ("limits.max_rank", int, True, None, *_in_range("limits.max_rank")),
    ("limits.max_dim_size", int, True, None, *_in_range("limits.max_dim_size")),
    # Issue 11 (op coverage), all optional.
    ("dtypes.accumulators", list, False, [], lambda v: all(k in DTYPES for k in v),
     "a list of: " + ", ".join(DTYPES)),
    ("dma.strided", bool, False, False, lambda v: True, "true or false"),
    ("dma.padded", bool, False, False, lambda v: True, "true or false"),
    ("mac_array.transpose", str, False, "none", lambda v: v in TRANSPOSE_BY,
     "one of " + ", ".join(TRANSPOSE_BY)),
    ("vector.functions", dict, False, _BASIC_FUNCTIONS, lambda v: True, "a table"),
    # Issue 26 (integer path), all optional: no output stage, every type at 1 MAC per cycle.
    ("output_stage.scale", list, False, [], lambda v: all(k in SCALE_MODES for k in v),
     "a list of: " + ", ".join(SCALE_MODES)),
    ("output_stage.rounding", str, False, "half-even", lambda v: v in ROUNDING_MODES,
     "one of " + ", ".join(ROUNDING_MODES)),
    ("output_stage.zero_point", bool, False, False, lambda v: True, "true or false"),
    ("output_stage.clamp", bool, False, False, lambda v: True, "true or false"),
    ("output_stage.bias", bool, False, False, lambda v: True, "true or false"),
    ("output_stage.narrow", list, False, [], lambda v: all(k in NARROW_TYPES for k in v),
     "a list of: " + ", ".join(NARROW_TYPES)),
    ("mac_array.macs_per_cycle", dict, False, {}, lambda v: True, "a table"),
))
MAX_MACS_PER_CYCLE = 64
_KNOWN_TABLES = {k.split(".")[0] for k, *_ in _SCHEMA if "." in k}


def key_line(text: str, dotted: str) -> int | None:
    """1-based line of `dotted` (`table.key` or `key`) in TOML `text`.

    For a missing key, the line of its table header (None if that is
    missing too).
    """
    *tables, key = dotted.split(".")
    want = ".".join(tables)
    current = ""
    header_line = None
    key_re = re.compile(rf"^\s*(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
    for no, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if m:
            current = m.group(1).strip()
            if current == want:
                header_line = no
            continue
        if current == want and key_re.match(line):
            return no
    return header_line


def toml_value(v: Any) -> str:
    """`v` as a TOML value (what tomllib reads back as `v`): for target and sweep files we write."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: same escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _get(data: dict, dotted: str) -> tuple[bool, Any]:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def parse_target(text: str, path: str | Path = "<string>", backend: str = "generic",
                 backend_keys: tuple[TargetKey, ...] = ()) -> NpuTarget:
    """Parse and check a target description for `backend`, whose own keys are
    `backend_keys` (`Backend.target_keys`); raises TargetError."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise TargetError(path, "<syntax>", int(m.group(1)) if m else None, str(e)) from None
    schema = _SCHEMA + tuple(TargetKey(*k) for k in backend_keys)
    tables = _KNOWN_TABLES | {k.split(".")[0] for k, *_ in backend_keys if "." in k}
    for table, value in data.items():
        if isinstance(value, dict) and table not in tables and table not in COST_TABLES:
            raise TargetError(path, table, key_line(text, table + ".__"), "unknown table")
    known = {k for k, *_ in schema}
    for table, value in data.items():
        if table in COST_TABLES:
            continue  # parse_cost_model checks them
        keys = value.items() if isinstance(value, dict) else [(None, value)]
        for k, _ in keys:
            dotted = f"{table}.{k}" if k is not None else table
            if dotted not in known:
                raise TargetError(path, dotted, key_line(text, dotted), "unknown key")
    values: dict[str, Any] = {}
    for key, typ, required, default, check, want in schema:
        present, v = _get(data, key)
        if not present:
            if required:
                raise TargetError(path, key, key_line(text, key), "missing required key")
            v = default
        if typ is int and key in INT_RANGES:
            problem = range_problem(key, v)
            if problem:
                raise TargetError(path, key, key_line(text, key), problem)
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)) or not check(v):
            raise TargetError(path, key, key_line(text, key), f"expected {want}, got {v!r}")
        values[key] = v
    functions = values["vector.functions"]
    for fn, cost in functions.items():
        key = f"vector.functions.{fn}"
        if fn not in VECTOR_FUNCTIONS:
            raise TargetError(path, key, key_line(text, key),
                              "unknown vector function; known: " + ", ".join(VECTOR_FUNCTIONS))
        problem = range_problem("vector.functions.*", cost)
        if problem:
            raise TargetError(path, key, key_line(text, key), f"cycles per element (a positive integer): {problem}")
    rates = values["mac_array.macs_per_cycle"]
    for dtype, rate in rates.items():
        key = f"mac_array.macs_per_cycle.{dtype}"
        if dtype not in DTYPES:
            raise TargetError(path, key, key_line(text, key), "unknown element type; known: " + ", ".join(DTYPES))
        if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= MAX_MACS_PER_CYCLE:
            raise TargetError(path, key, key_line(text, key),
                              f"expected MACs per cycle (an integer 1..{MAX_MACS_PER_CYCLE}), got {rate!r}")
    if values["output_stage.scale"] and not values["output_stage.narrow"]:
        key = "output_stage.narrow"
        raise TargetError(path, key, key_line(text, key),
                          "an output stage that scales must narrow to at least one of " + ", ".join(NARROW_TYPES))
    return NpuTarget(
        name=values["name"],
        clock_mhz=values["clock_mhz"],
        mac_rows=values["mac_array.rows"],
        mac_cols=values["mac_array.cols"],
        dataflow=DATAFLOW_SHORT.get(values["mac_array.dataflow"], values["mac_array.dataflow"]),
        vector_lanes=values["vector.lanes"],
        sram_bytes=values["sram.size_kib"] * 1024,
        sram_banks=values["sram.banks"],
        dram_bytes_per_cycle=values["dram.bytes_per_cycle"],
        dma_channels=values["dma.channels"],
        op_kinds=tuple(values["ops.supported"]),
        dtypes=tuple(values["dtypes.supported"]),
        max_rank=values["limits.max_rank"],
        max_dim_size=values["limits.max_dim_size"],
        acc_dtypes=tuple(values["dtypes.accumulators"]),
        dma_strided=values["dma.strided"],
        dma_padded=values["dma.padded"],
        transpose_by=values["mac_array.transpose"],
        vector_functions=tuple(sorted(functions.items())),
        dma_setup_cycles=values["dma.setup_cycles"],
        cpu_launch_cycles=values["cpu.launch_cycles"],
        cpu_ops_per_cycle=values["cpu.ops_per_cycle"],
        output_stage=OutputStage(
            scale=tuple(dict.fromkeys(values["output_stage.scale"])),
            rounding=values["output_stage.rounding"], zero_point=values["output_stage.zero_point"],
            clamp=values["output_stage.clamp"], bias=values["output_stage.bias"], narrow=tuple(dict.fromkeys(values["output_stage.narrow"]))),
        macs_per_cycle=tuple(sorted(rates.items())),
        cost=parse_cost_model(data, DTYPES, lambda key, reason: TargetError(
            path, key, key_line(text, key), reason)),
        backend=backend,
        backend_values=tuple(sorted((k.key, _frozen(values[k.key])) for k in backend_keys)),
        source=str(path),
    )


def _frozen(v: Any) -> Any:
    """A TOML value as a hashable one (targets are memo keys)."""
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


def user_targets_dir() -> Path:
    """The user's named targets (`calibrate --out NAME`, edits of a bundled one): <config>/targets."""
    from ...paths import config_dir

    return config_dir() / "targets"


def target_file(path: str | Path | None = None) -> Path:
    """The file a target argument names. None means the bundled default; a bare name that is not a
    file here ("tiny", "mychip-calibrated") names a bundled target, else one of the user's. An unknown
    bare name: TargetError listing the names there are."""
    if path is None:
        return RESOURCES / "default.toml"
    p = Path(path)
    if p.exists() or len(p.parts) != 1 or p.name.endswith(".toml"):
        return p
    for folder in (RESOURCES, user_targets_dir()):
        named = folder / f"{p.name}.toml"
        if named.is_file():
            return named
    bundled = sorted(q.stem for q in RESOURCES.glob("*.toml"))
    yours = sorted(q.stem for q in user_targets_dir().glob("*.toml")) if user_targets_dir().is_dir() else []
    raise TargetError(p, "<file>", None, f"no such file, and no target is named {p.name!r} (bundled: "
                                         f"{', '.join(bundled)}; yours: {', '.join(yours) or 'none'})")


def load_target(path: str | Path | None = None) -> NpuTarget:
    """Load a target file; None or a bare name ("tiny") means a bundled one."""
    p = target_file(path)
    return parse_target(read_target_text(p), p)


MAX_TARGET_BYTES = 1 << 20  # a target file is a few KiB of TOML


def read_target_text(p: Path) -> str:
    """The text of a target file; TargetError naming it (with the byte offset of a bad byte)."""
    try:  # a FIFO is refused without waiting, /dev/zero or a huge file without reading it
        data = read_bytes(p, MAX_TARGET_BYTES)
    except BadFile as e:
        raise TargetError(p, "<file>", None, e.reason) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TargetError(p, "<file>", line, f"not UTF-8 text: byte 0x{data[e.start]:02x} at byte offset "
                                             f"{e.start} cannot be decoded") from None
