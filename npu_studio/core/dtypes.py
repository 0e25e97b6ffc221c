"""MLIR element types: their storage size and numpy types. The one table.

Every module that needs the size of an element (the dispatch index's byte
counts, the NPU's tiles and transfers, parameter sizes) or its numpy type
(runtime inputs, parameter archives) asks here.
"""

from __future__ import annotations

from .lazy_import import lazy_module

np = lazy_module("numpy")  # loaded on first use: not at the app's start

# element type -> (bytes in memory, numpy type of its values or None, numpy type of its bytes)
# Types numpy has no arithmetic for (bf16, f8) are read as their raw bits.
_TABLE: dict[str, tuple[int, str | None, str]] = {
    "i1": (1, "bool", "bool"),
    "i8": (1, "int8", "int8"), "si8": (1, "int8", "int8"), "ui8": (1, "uint8", "uint8"),
    "i16": (2, "int16", "int16"), "si16": (2, "int16", "int16"), "ui16": (2, "uint16", "uint16"),
    "i32": (4, "int32", "int32"), "si32": (4, "int32", "int32"), "ui32": (4, "uint32", "uint32"),
    "i64": (8, "int64", "int64"), "si64": (8, "int64", "int64"), "ui64": (8, "uint64", "uint64"),
    "index": (8, "int64", "int64"),
    "f16": (2, "float16", "float16"), "bf16": (2, None, "uint16"),
    "f32": (4, "float32", "float32"), "f64": (8, "float64", "float64"),
    "f8E4M3FN": (1, None, "uint8"), "f8E5M2": (1, None, "uint8"),
    "f8E4M3FNUZ": (1, None, "uint8"), "f8E5M2FNUZ": (1, None, "uint8"),
}


def nbytes(dtype: str) -> int:
    """Storage bytes of one element. Types not in the table by their bit
    width (i4 and other sub-byte types take a whole byte); complex types
    twice that; 4 when the name has no width."""
    if dtype in _TABLE:
        return _TABLE[dtype][0]
    digits = ""
    for ch in dtype:
        if ch.isdigit():
            digits += ch
        elif digits:
            break
    if not digits:
        return 4
    n = max(1, (int(digits) + 7) // 8)
    return 2 * n if dtype.startswith("complex") else n


def numpy_value_dtype(dtype: str) -> np.dtype | None:
    """numpy type holding the element's values (None: numpy has none, e.g. bf16)."""
    entry = _TABLE.get(dtype)
    return np.dtype(entry[1]) if entry and entry[1] else None


def numpy_storage_dtype(dtype: str) -> np.dtype | None:
    """numpy type of the element's bytes (bf16 as uint16), None if unknown."""
    entry = _TABLE.get(dtype)
    return np.dtype(entry[2]) if entry else None


def known(dtype: str) -> bool:
    return dtype in _TABLE
