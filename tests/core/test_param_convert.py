"""A demoted build's parameter archive: the declared types read off the globals, the data converted, never resized.

Truths: the archive the test writes with IREE's runtime, numpy's own casts,
and globals written the way IREE 3.13 prints a demoted one.
"""

from __future__ import annotations

import numpy as np
import pytest

from npu_studio.core.compile.param_convert import convert_archive
from npu_studio.core.compile.param_refs import held_types
from npu_studio.core.compile.params import ParameterArchive
from npu_studio.core.errors import StudioError

IMPORTED = '''
  util.global private @W = #stream.parameter.named<"model"::"W"> : tensor<64x32xf32> loc(#loc)
  util.global private @E = #stream.parameter.named<"model"::"E"> : tensor<10xi64> loc(#loc)
  util.global private @K = #stream.parameter.named<"model"::"K"> : tensor<8xf32> loc(#loc)
'''
# IREE 3.13 after --iree-input-demote-f32-to-f16 and -i64-to-i32: the global's type changes, the reference's not
DEMOTED = '''
  util.global private @W : tensor<64x32xf16> = #stream.parameter.named<"model"::"W"> : tensor<64x32xf32> loc(#loc)
  util.global private @E : tensor<10xi32> = #stream.parameter.named<"model"::"E"> : tensor<10xi64> loc(#loc)
  util.global private @K = #stream.parameter.named<"model"::"K"> : tensor<8xf32> loc(#loc)
  %0 = util.global.load @W : tensor<64x32xf16>
'''


@pytest.fixture
def archive(tmp_path):
    import iree.runtime as rt

    rng = np.random.default_rng(0)
    arrays = {"W": rng.normal(0, 300, (64, 32)).astype(np.float32),  # some past f16's range once scaled
              "E": np.arange(-5, 5, dtype=np.int64),
              "K": rng.normal(size=8).astype(np.float32)}
    arrays["W"][0, 0] = 1e6  # rounds to inf in f16
    index = rt.ParameterIndex()
    for name, a in arrays.items():
        index.add_buffer(name, a.reshape(-1))
    path = tmp_path / "params.irpa"
    index.create_archive_file(str(path))
    return path, arrays


def test_held_types_are_the_globals_not_the_references():
    assert held_types(IMPORTED) == {"W": ((64, 32), "f32"), "E": ((10,), "i64"), "K": ((8,), "f32")}
    assert held_types(DEMOTED) == {"W": ((64, 32), "f16"), "E": ((10,), "i32"), "K": ((8,), "f32")}


def test_converted_archive_holds_what_numpy_casts(archive, tmp_path):
    source, arrays = archive
    dest = tmp_path / "out" / "params.irpa"
    converted = convert_archive(source, held_types(IMPORTED), held_types(DEMOTED), dest, tmp_path / "work",
                                tmp_path / "flow.mlir")
    assert converted == ["E", "W"]
    out = ParameterArchive(dest)
    assert out.nbytes("W") == 64 * 32 * 2 and out.nbytes("E") == 10 * 4
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.array("W", (64, 32), np.float16), arrays["W"].astype(np.float16))
    assert np.isinf(out.array("W", (64, 32), np.float16)[0, 0])
    np.testing.assert_array_equal(out.array("E", (10,), np.int32), np.arange(-5, 5, dtype=np.int32))
    np.testing.assert_array_equal(out.array("K", (8,), np.float32), arrays["K"])  # copied unchanged
    assert not list((tmp_path / "work").iterdir())  # the scratch file is gone


def test_nothing_to_convert_writes_nothing(archive, tmp_path):
    source, _ = archive
    dest = tmp_path / "params.irpa.out"
    assert convert_archive(source, held_types(IMPORTED), held_types(IMPORTED), dest, tmp_path / "w", source) == []
    assert not dest.exists()


def test_a_parameter_declared_with_another_shape_is_refused(archive, tmp_path):
    source, _ = archive
    reshaped = DEMOTED.replace("tensor<64x32xf16>", "tensor<32x64xf16>", 1)
    with pytest.raises(StudioError) as exc:
        convert_archive(source, held_types(IMPORTED), held_types(reshaped), tmp_path / "o.irpa", tmp_path / "w",
                        tmp_path / "flow.mlir")
    assert str(exc.value).count("\n") == 0
    assert "'W' is 64x32xf32 in the archive but declared 32x64xf16" in str(exc.value)
    assert not (tmp_path / "o.irpa").exists()
