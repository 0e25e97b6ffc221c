"""MLIR element types: their storage size and numpy types. The one table.

Every module that needs the size of an element (the dispatch index's byte
counts, the NPU's tiles and transfers, parameter sizes) or its numpy type
(runtime inputs, parameter archives, the dispatch interpreter) asks here.
numpy has no bf16 or f8 types: `ml_dtypes` (which IREE's runtime uses for
them too) gives them, and their bytes can be read as unsigned integers.
"""

from __future__ import annotations

from .lazy_import import lazy_module

np = lazy_module("numpy")  # loaded on first use: not at the app's start
ml_dtypes = lazy_module("ml_dtypes")

# element type -> (bytes in memory, numpy type of its values: numpy's name, or ml_dtypes' for the types
# numpy lacks). Sizes are written out so that a byte count never loads numpy.
_TABLE: dict[str, tuple[int, str]] = {
    "i1": (1, "bool"),
    "i8": (1, "int8"), "si8": (1, "int8"), "ui8": (1, "uint8"),
    "i16": (2, "int16"), "si16": (2, "int16"), "ui16": (2, "uint16"),
    "i32": (4, "int32"), "si32": (4, "int32"), "ui32": (4, "uint32"),
    "i64": (8, "int64"), "si64": (8, "int64"), "ui64": (8, "uint64"),
    "index": (8, "int64"),
    "f16": (2, "float16"), "bf16": (2, "bfloat16"),
    "f32": (4, "float32"), "f64": (8, "float64"),
    "f8E4M3FN": (1, "float8_e4m3fn"), "f8E5M2": (1, "float8_e5m2"),
    "f8E4M3FNUZ": (1, "float8_e4m3fnuz"), "f8E5M2FNUZ": (1, "float8_e5m2fnuz"),
    "f8E4M3": (1, "float8_e4m3"), "f8E3M4": (1, "float8_e3m4"),
    "f8E4M3B11FNUZ": (1, "float8_e4m3b11fnuz"), "f8E8M0FNU": (1, "float8_e8m0fnu"),
}
_ML_DTYPES = frozenset(name for _, name in _TABLE.values() if name.startswith(("bfloat", "float8")))

# numpy type name -> the element type it comes back as (the first one listed: i8, not si8; i64, not index)
_BY_NUMPY: dict[str, str] = {}
for _element, (_, _name) in _TABLE.items():
    _BY_NUMPY.setdefault(_name, _element)


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
    """numpy type holding the element's values (bf16 and f8 from ml_dtypes); None if unknown."""
    entry = _TABLE.get(dtype)
    if entry is None:
        return None
    name = entry[1]
    return np.dtype(getattr(ml_dtypes, name) if name in _ML_DTYPES else name)


def numpy_storage_dtype(dtype: str) -> np.dtype | None:
    """numpy type of the element's bytes: its value type, or for bf16 and f8 (no arithmetic
    in numpy itself) the unsigned integer of their size; None if unknown."""
    entry = _TABLE.get(dtype)
    if entry is None:
        return None
    size, name = entry
    return np.dtype(f"uint{8 * size}") if name in _ML_DTYPES else np.dtype(name)


def element_type(dtype) -> str | None:
    """The element type of a numpy type or its name (`float32` -> `f32`, ml_dtypes' `bfloat16` -> `bf16`),
    None if none."""
    return _BY_NUMPY.get(dtype if isinstance(dtype, str) else np.dtype(dtype).name)


def is_float(dtype: str) -> bool:
    """Whether the element type is a floating-point one (f16, bf16, f8...)."""
    return dtype in _TABLE and dtype.startswith(("f", "bf"))


def known(dtype: str) -> bool:
    return dtype in _TABLE
