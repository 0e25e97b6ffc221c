import pytest

from npu_studio.core.npu.target.target import RESOURCES, TargetError, load_target, parse_target

DEFAULT = (RESOURCES / "default.toml").read_text()


def test_bundled_targets_load():
    d, t = load_target(), load_target("tiny")
    assert "f32" in d.dtypes and "f32" not in t.dtypes
    assert t.sram_bytes == 64 * 1024
    for target in (d, t):
        assert {"f16", "bf16", "i8"} <= set(target.dtypes)
        assert target.dataflow in ("output-stationary", "weight-stationary")


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_wrong_type_names_key_and_line(tmp_path):
    bad = DEFAULT.replace("cols = 32", 'cols = "wide"')
    f = tmp_path / "bad.toml"
    f.write_text(bad)
    with pytest.raises(TargetError) as e:
        load_target(f)
    assert e.value.key == "mac_array.cols"
    assert e.value.line == _line_of(bad, 'cols = "wide"')
    assert str(e.value).startswith(f"{f}:{e.value.line}: mac_array.cols:")


def test_invalid_value_names_key_and_line():
    bad = DEFAULT.replace('dataflow = "output-stationary"', 'dataflow = "row-stationary"')
    with pytest.raises(TargetError) as e:
        parse_target(bad, "t.toml")
    assert (e.value.key, e.value.line) == ("mac_array.dataflow", _line_of(bad, "row-stationary"))


def test_unknown_dtype_and_kind():
    bad = DEFAULT.replace('"f32", "f16"', '"f33", "f16"')
    with pytest.raises(TargetError) as e:
        parse_target(bad, "t.toml")
    assert e.value.key == "dtypes.supported" and e.value.line == _line_of(bad, '"f33"')


def test_missing_key_points_at_its_table():
    bad = DEFAULT.replace("lanes = 64\n", "")
    with pytest.raises(TargetError) as e:
        parse_target(bad, "t.toml")
    assert e.value.key == "vector.lanes" and e.value.line == _line_of(bad, "[vector]")
    assert "missing" in str(e.value)


def test_unknown_key_and_syntax_error():
    bad = DEFAULT.replace("channels = 4", "channels = 4\nspeed = 3")
    with pytest.raises(TargetError) as e:
        parse_target(bad, "t.toml")
    assert e.value.key == "dma.speed" and e.value.line == _line_of(bad, "speed = 3")
    with pytest.raises(TargetError) as e:
        parse_target(DEFAULT.replace("rows = 32", "rows = = 32"), "t.toml")
    assert e.value.line == _line_of(DEFAULT, "rows = 32")


def test_negative_size_rejected():
    with pytest.raises(TargetError) as e:
        parse_target(DEFAULT.replace("size_kib = 2048", "size_kib = -1"), "t.toml")
    assert e.value.key == "sram.size_kib"
