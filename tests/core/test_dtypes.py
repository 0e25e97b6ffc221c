"""core/dtypes.py, the one table of element types, against values worked out by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npu_studio.core import dtypes
from npu_studio.core.compile.param_refs import as_float
from npu_studio.core.run.dispatches.scalar_ops import NotInterpretable, numpy_dtype


@pytest.mark.parametrize("element, size", [
    ("i1", 1), ("i8", 1), ("ui8", 1), ("si16", 2), ("i32", 4), ("i64", 8), ("index", 8),
    ("f16", 2), ("bf16", 2), ("f32", 4), ("f64", 8), ("f8E4M3FN", 1), ("f8E5M2FNUZ", 1),
    # not in the table: by bit width, a sub-byte type takes a whole byte, complex twice its part
    ("i4", 1), ("i48", 6), ("complex<f32>", 8), ("none", 4),
])
def test_bytes_of_one_element(element, size):
    assert dtypes.nbytes(element) == size


@pytest.mark.parametrize("element, value, storage", [
    ("i1", np.bool_, np.bool_), ("i8", np.int8, np.int8), ("ui8", np.uint8, np.uint8),
    ("index", np.int64, np.int64), ("f16", np.float16, np.float16), ("f32", np.float32, np.float32),
    ("bf16", ml_dtypes.bfloat16, np.uint16),
    ("f8E4M3FN", ml_dtypes.float8_e4m3fn, np.uint8), ("f8E5M2", ml_dtypes.float8_e5m2, np.uint8),
])
def test_numpy_types_of_values_and_of_bytes(element, value, storage):
    assert dtypes.numpy_value_dtype(element) == np.dtype(value)
    assert dtypes.numpy_storage_dtype(element) == np.dtype(storage)


def test_unknown_types_have_no_numpy_type():
    assert dtypes.numpy_value_dtype("i4") is None and dtypes.numpy_storage_dtype("i4") is None
    assert not dtypes.known("i4") and dtypes.known("bf16")


def test_every_entry_agrees_with_numpy_on_its_size():
    for element in dtypes._TABLE:
        assert dtypes.numpy_value_dtype(element).itemsize == dtypes.nbytes(element), element
        assert dtypes.numpy_storage_dtype(element).itemsize == dtypes.nbytes(element), element


def test_names_round_trip():
    canonical = ["i1", "i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64", "f16", "bf16", "f32", "f64",
                 "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ"]
    for element in canonical:
        assert dtypes.element_type(dtypes.numpy_value_dtype(element)) == element
    assert dtypes.element_type("float32") == "f32" and dtypes.element_type(np.float16) == "f16"
    assert dtypes.element_type(ml_dtypes.bfloat16) == "bf16"
    # aliases come back as the plain type
    assert dtypes.element_type(dtypes.numpy_value_dtype("si8")) == "i8"
    assert dtypes.element_type(dtypes.numpy_value_dtype("index")) == "i64"
    assert dtypes.element_type(np.complex64) is None


def test_raw_bits_read_as_values():
    # bf16 is the top half of an f32: 0x3F80 = 1.0, 0xC000 = -2.0, 0x3FC0 = 1.5
    assert as_float(np.array([0x3F80, 0xC000, 0x3FC0], np.uint16), "bf16").tolist() == [1.0, -2.0, 1.5]
    # f8E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits: 0x38 = 1.0, 0xC4 = -3.0
    assert as_float(np.array([0x38, 0xC4], np.uint8), "f8E4M3FN").tolist() == [1.0, -3.0]
    # f8E5M2: 5 exponent bits (bias 15), 2 mantissa bits: 0x3C = 1.0, 0x42 = 3.0
    assert as_float(np.array([0x3C, 0x42], np.uint8), "f8E5M2").tolist() == [1.0, 3.0]
    values = np.array([1.5, -2.0], np.float32)
    assert as_float(values, "f32") is values


def test_floats_are_told_from_integers():
    assert all(dtypes.is_float(t) for t in ("f16", "bf16", "f32", "f8E4M3FN"))
    assert not any(dtypes.is_float(t) for t in ("i1", "i8", "ui8", "index", "i4", "fx"))


def test_the_interpreter_takes_its_types_from_the_table():
    assert numpy_dtype("bf16") == np.dtype(ml_dtypes.bfloat16)
    assert numpy_dtype("index") == np.dtype(np.int64) and numpy_dtype("i1") == np.dtype(np.bool_)
    for outside in ("ui8", "f8E4M3FN", "i4"):  # these dispatches go to IREE's CPU build, as before
        with pytest.raises(NotInterpretable):
            numpy_dtype(outside)
