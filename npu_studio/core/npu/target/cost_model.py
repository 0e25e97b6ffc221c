"""Energy and area of a target: the `[energy]`, `[area]` and `[technology]` tables.

Kept apart from target.py's timing and legality keys: these only turn a
simulated run into picojoules and a target into square millimetres
(sim/energy.py). Every key is optional; the defaults are 45 nm figures,
their sources in docs/npu-target.md ("Energy and area"):

- energy per MAC, per vector op, per DRAM and SRAM byte: Horowitz,
  "Computing's energy problem", ISSCC 2014 (45 nm, 0.9 V);
- area per MAC: the same table's multiplier and adder areas;
- area per MiB of SRAM: Intel's 45 nm 0.346 um^2 bit cell (Mistry et al.,
  IEDM 2007) at 70% array efficiency.

`technology.energy_scale` and `technology.area_scale` multiply every energy
and area, to carry the 45 nm figures to another node.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

# MAC energy in pJ per multiply-accumulate: Horowitz's multiply + add of the type
# (i8: 8-bit multiply 0.2 + 32-bit add 0.1, the accumulator being 32-bit;
# i32: 3.1 + 0.1; f16: 1.1 + 0.4; f32: 3.7 + 0.9). bf16 has no figure there: f16's.
DEFAULT_MAC_PJ = (("bf16", 1.5), ("f16", 1.5), ("f32", 4.6), ("i32", 3.2), ("i8", 0.3))
MAX_PJ = 1.0e6  # ranges: far above any published figure, below nonsense (a typo in exponent)
MAX_SCALE = 100.0


@dataclass(frozen=True)
class CostModel:
    """What a byte, a MAC and a square millimetre cost on the target (units in the names)."""

    dram_read_pj_per_byte: float = 162.5  # Horowitz: DRAM 1.3 nJ per 64-bit access (low end)
    dram_write_pj_per_byte: float = 162.5  # Horowitz gives one DRAM figure: reads = writes
    sram_read_pj_per_byte: float = 12.5  # Horowitz: 64-bit read of a 1 MB SRAM, 100 pJ
    sram_write_pj_per_byte: float = 12.5  # no separate write figure: the read's
    vector_pj_per_op: float = 0.9  # Horowitz: 32-bit float add
    mac_pj: tuple[tuple[str, float], ...] = DEFAULT_MAC_PJ  # by element type of the MAC op
    mac_pj_other: float = 4.6  # element types not in mac_pj: f32's (never under-counted)
    sram_leakage_mw_per_mib: float = 0.0  # no published 45 nm figure at hand: set yours
    sram_mm2_per_mib: float = 4.15  # 8 Mi bits x 0.346 um^2 / 0.7
    mac_mm2: float = 0.011884  # Horowitz: 32-bit float multiply 7700 + add 4184 um^2
    energy_scale: float = 1.0
    area_scale: float = 1.0

    def mac_energy_pj(self, dtype: str) -> float:
        return dict(self.mac_pj).get(dtype, self.mac_pj_other)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mac_pj"] = dict(self.mac_pj)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CostModel":
        d = dict(d)
        if "mac_pj" in d:
            d["mac_pj"] = tuple(sorted(dict(d["mac_pj"]).items()))
        return cls(**d)


def _range(lo: float, hi: float, *, open_lo: bool = False) -> tuple[Callable[[Any], bool], str]:
    def ok(v: Any) -> bool:
        return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                and (v > lo if open_lo else v >= lo) and v <= hi)
    return ok, f"a number in {'(' if open_lo else '['}{lo:g}, {hi:g}]"


# (dotted key, CostModel field, check, what it wants); docs/npu-target.md lists the same ranges.
COST_KEYS: tuple[tuple[str, str, Callable[[Any], bool], str], ...] = (
    ("energy.dram_read_pj_per_byte", "dram_read_pj_per_byte", *_range(0, MAX_PJ)),
    ("energy.dram_write_pj_per_byte", "dram_write_pj_per_byte", *_range(0, MAX_PJ)),
    ("energy.sram_read_pj_per_byte", "sram_read_pj_per_byte", *_range(0, MAX_PJ)),
    ("energy.sram_write_pj_per_byte", "sram_write_pj_per_byte", *_range(0, MAX_PJ)),
    ("energy.vector_pj_per_op", "vector_pj_per_op", *_range(0, MAX_PJ)),
    ("energy.mac_pj_other", "mac_pj_other", *_range(0, MAX_PJ)),
    ("energy.sram_leakage_mw_per_mib", "sram_leakage_mw_per_mib", *_range(0, MAX_PJ)),
    ("area.sram_mm2_per_mib", "sram_mm2_per_mib", *_range(0, 1.0e4)),
    ("area.mac_mm2", "mac_mm2", *_range(0, 1.0e3)),
    ("technology.energy_scale", "energy_scale", *_range(0, MAX_SCALE, open_lo=True)),
    ("technology.area_scale", "area_scale", *_range(0, MAX_SCALE, open_lo=True)),
)
COST_TABLES = ("energy", "area", "technology")
MAC_PJ_TABLE = "energy.mac_pj"


def parse_cost_model(data: dict, dtypes: tuple[str, ...],
                     error: Callable[[str, str], Exception]) -> CostModel:
    """The cost model of parsed target TOML `data`; `error(key, reason)` makes the exception
    (target.py's TargetError with the key's line)."""
    values: dict[str, Any] = {}
    by_key = {k: (f, check, want) for k, f, check, want in COST_KEYS}
    for table in COST_TABLES:
        node = data.get(table, {})
        if not isinstance(node, dict):
            raise error(table, "expected a table")
        for key, v in node.items():
            dotted = f"{table}.{key}"
            if dotted == MAC_PJ_TABLE:
                values["mac_pj"] = _mac_table(v, dtypes, error)
                continue
            if dotted not in by_key:
                raise error(dotted, "unknown key")
            fld, check, want = by_key[dotted]
            if not check(v):
                raise error(dotted, f"expected {want}, got {v!r}")
            values[fld] = float(v)
    return CostModel(**values)


def _mac_table(v: Any, dtypes: tuple[str, ...], error) -> tuple[tuple[str, float], ...]:
    if not isinstance(v, dict):
        raise error(MAC_PJ_TABLE, "expected a table of element type = pJ per MAC")
    check, want = _range(0, MAX_PJ)
    merged = dict(DEFAULT_MAC_PJ)
    for dtype, pj in v.items():
        key = f"{MAC_PJ_TABLE}.{dtype}"
        if dtype not in dtypes:
            raise error(key, "unknown element type; known: " + ", ".join(dtypes))
        if not check(pj):
            raise error(key, f"expected {want}, got {pj!r}")
        merged[dtype] = float(pj)
    return tuple(sorted(merged.items()))
