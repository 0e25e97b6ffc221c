"""The NPU target description, loaded from a TOML file.

A target says what the NPU has (MAC array, vector unit, SRAM, DMA, DRAM
bandwidth, clock) and what it accepts (op kinds, element types, limits).
docs/npu-target.md documents the format; resources/targets/*.toml are
commented examples.

Errors name the file, the key and the line: `TargetError` carries all
three. tomllib reports no lines for values, so `_key_line` finds the
key's line in the text itself.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...resources import TARGETS_DIR as RESOURCES  # package data: also found inside a wheel
from ..errors import StudioError

DATAFLOWS = ("output-stationary", "weight-stationary")
DATAFLOW_SHORT = {"os": "output-stationary", "ws": "weight-stationary"}
OP_KINDS = (
    "conv", "depthwise_conv", "matmul", "batch_matmul", "pooling",
    "reduction", "elementwise", "copy/transpose",
)
DTYPE_BYTES = {
    "i8": 1, "ui8": 1, "i16": 2, "i32": 4, "i64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1,
}


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
    # Timing-only keys (optional in the file; older model.npu.json files lack them).
    dma_setup_cycles: int = 64
    cpu_launch_cycles: int = 2000
    cpu_ops_per_cycle: int = 16
    source: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("source")
        d["op_kinds"] = list(self.op_kinds)
        d["dtypes"] = list(self.dtypes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NpuTarget":
        d = dict(d)
        d["op_kinds"] = tuple(d["op_kinds"])
        d["dtypes"] = tuple(d["dtypes"])
        return cls(**d)


# (dotted key, type, required, default, check, what the check wants)
_Check = tuple[str, type, bool, Any, Any, str]
_SCHEMA: tuple[_Check, ...] = (
    ("name", str, True, None, lambda v: bool(v), "a non-empty string"),
    ("clock_mhz", int, True, None, lambda v: v > 0, "a positive integer"),
    ("mac_array.rows", int, True, None, lambda v: v > 0, "a positive integer"),
    ("mac_array.cols", int, True, None, lambda v: v > 0, "a positive integer"),
    ("mac_array.dataflow", str, False, "output-stationary",
     lambda v: v in DATAFLOWS or v in DATAFLOW_SHORT,
     "one of " + ", ".join(DATAFLOWS + tuple(DATAFLOW_SHORT))),
    ("vector.lanes", int, True, None, lambda v: v > 0, "a positive integer"),
    ("sram.size_kib", int, True, None, lambda v: v > 0, "a positive integer"),
    ("sram.banks", int, False, 1, lambda v: v > 0, "a positive integer"),
    ("dram.bytes_per_cycle", int, True, None, lambda v: v > 0, "a positive integer"),
    ("dma.channels", int, True, None, lambda v: v > 0, "a positive integer"),
    ("dma.setup_cycles", int, False, 64, lambda v: v >= 0, "a non-negative integer"),
    ("cpu.launch_cycles", int, False, 2000, lambda v: v >= 0, "a non-negative integer"),
    ("cpu.ops_per_cycle", int, False, 16, lambda v: v > 0, "a positive integer"),
    ("ops.supported", list, True, None,
     lambda v: bool(v) and all(isinstance(k, str) and k in OP_KINDS for k in v),
     "a non-empty list of: " + ", ".join(OP_KINDS)),
    ("dtypes.supported", list, True, None,
     lambda v: bool(v) and all(isinstance(k, str) and k in DTYPE_BYTES for k in v),
     "a non-empty list of: " + ", ".join(DTYPE_BYTES)),
    ("limits.max_rank", int, True, None, lambda v: v > 0, "a positive integer"),
    ("limits.max_dim_size", int, True, None, lambda v: v > 0, "a positive integer"),
)
_KNOWN_TABLES = {k.split(".")[0] for k, *_ in _SCHEMA if "." in k}


def _key_line(text: str, dotted: str) -> int | None:
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


def _get(data: dict, dotted: str) -> tuple[bool, Any]:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def parse_target(text: str, path: str | Path = "<string>") -> NpuTarget:
    """Parse and check a target description; raises TargetError."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise TargetError(path, "<syntax>", int(m.group(1)) if m else None, str(e)) from None
    for table, value in data.items():
        if isinstance(value, dict) and table not in _KNOWN_TABLES:
            raise TargetError(path, table, _key_line(text, table + ".__"), "unknown table")
    known = {k for k, *_ in _SCHEMA}
    for table, value in data.items():
        keys = value.items() if isinstance(value, dict) else [(None, value)]
        for k, _ in keys:
            dotted = f"{table}.{k}" if k is not None else table
            if dotted not in known:
                raise TargetError(path, dotted, _key_line(text, dotted), "unknown key")
    values: dict[str, Any] = {}
    for key, typ, required, default, check, want in _SCHEMA:
        present, v = _get(data, key)
        if not present:
            if required:
                raise TargetError(path, key, _key_line(text, key), "missing required key")
            v = default
        if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise TargetError(path, key, _key_line(text, key), f"expected {want}, got {v!r}")
        if not isinstance(v, typ) or not check(v):
            raise TargetError(path, key, _key_line(text, key), f"expected {want}, got {v!r}")
        values[key] = v
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
        dma_setup_cycles=values["dma.setup_cycles"],
        cpu_launch_cycles=values["cpu.launch_cycles"],
        cpu_ops_per_cycle=values["cpu.ops_per_cycle"],
        source=str(path),
    )


def target_file(path: str | Path | None = None) -> Path:
    """The file a target argument names; None or a bare name ("tiny") means a bundled one."""
    if path is None:
        path = RESOURCES / "default.toml"
    p = Path(path)
    if not p.exists() and not p.suffix and (RESOURCES / f"{p.name}.toml").exists():
        p = RESOURCES / f"{p.name}.toml"
    return p


def load_target(path: str | Path | None = None) -> NpuTarget:
    """Load a target file; None or a bare name ("tiny") means a bundled one."""
    p = target_file(path)
    return parse_target(read_target_text(p), p)


def read_target_text(p: Path) -> str:
    """The text of a target file; TargetError naming it (with the byte offset of a bad byte)."""
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise TargetError(p, "<file>", None, f"cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TargetError(p, "<file>", line, f"not UTF-8 text: byte 0x{data[e.start]:02x} at byte offset "
                                             f"{e.start} cannot be decoded") from None
