"""Property tests of the readers issue 36 added or hardened: sweep specs, variant flags, and measured
tables (a sweep's results CSV, iree-profile's dispatch records). Each succeeds or raises StudioError in
one line naming the file; nothing else escapes, and a spec never builds an unbounded list.

Profiles as in test_reader_properties.py: `make test` runs a bounded number of examples with a fixed
seed; `make fuzz` (NPU_STUDIO_FUZZ_PROFILE=fuzz) thousands, with a fresh seed.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from npu_studio.core.errors import StudioError
from npu_studio.core.npu.hal.measured import parse_profile
from npu_studio.core.sweep.spec import load_spec
from npu_studio.core.sweep.spec_values import MAX_POINTS, MAX_VALUES
from npu_studio.core.sweep.table import read_table
from npu_studio.core.workspace.variants import parse_flags

from .test_reader_properties import FIXTURES, HOSTILE_VALUES, byte_mutations, succeeds_or_names

SPEC = """
target = "default"
models = ["model.mlir"]
metrics = ["cycles", "energy_pj"]

[parameters]
"sram.size_kib" = { log2 = [64, 2048] }
"dram.bytes_per_cycle" = [16, 32, 64]
"clock_mhz" = { range = [500, 1000, 250] }
"mac_array.rows+mac_array.cols" = [8, 16]

[sampling]
method = "latin-hypercube"
points = 50
seed = 1

[constraints]
area_mm2 = { max = 40.0 }
"""
# TOML values a spec's leaves are replaced with: the hostile JSON values that TOML can say, and more
TOML_VALUES = ["1e18", "1000000000000000000", "-1", "0", "inf", "-inf", "nan", "1e-300", "-1e-300",
               "1000000000", '"x"', '""', "true", "[]", "{}", "[1, [2, [3]]]", '{ a = { b = 1 } }',
               '"a\\u0000b"', "9223372036854775807", "-9223372036854775808", "1.5", "[nan]", "[inf, 1]",
               "{ range = [1, 1e18, 1e-300] }", "{ range = [1, nan, 1] }", "{ log2 = [1, 9223372036854775807] }",
               "{ range = [0, 1000000000, 1] }", '"' + "a." * 300 + 'b"']


def _spec_leaves() -> list[str]:
    """Each assignment line of SPEC (its value is what a mutation replaces)."""
    return [ln for ln in SPEC.splitlines() if "=" in ln and not ln.startswith("[")]


@st.composite
def spec_mutations(draw) -> bytes:
    if draw(st.booleans()):
        return draw(byte_mutations(SPEC.encode()))
    text = SPEC
    for _ in range(draw(st.integers(1, 3))):
        line = draw(st.sampled_from(_spec_leaves()))
        key = line.split("=", 1)[0]
        kind = draw(st.sampled_from(["value", "key", "table"]))
        if kind == "value":
            new = key + "= " + draw(st.sampled_from(TOML_VALUES))
        elif kind == "key":
            new = '"' + draw(st.sampled_from(["a." * 50 + "b", "sram", "clock_mhz.x", "", "+", "sram.size_kib+"
                                               + "+".join(["clock_mhz"] * 40), "vector.functions.add"])) \
                  + '" = [1, 2]'
        else:  # a number where a table is expected
            new = f"{draw(st.sampled_from(['sampling', 'constraints', 'parameters']))}_ = 5"
            new = new.replace("_ ", " ")
        text = text.replace(line, new, 1)
    return text.encode("utf-8", "surrogatepass")


@FIXTURES
@given(data=spec_mutations())
def test_sweep_specs(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("spec")
    (folder / "model.mlir").write_text("module {}\n")
    path = folder / "sweep.toml"
    path.write_bytes(data)

    def read():
        spec = load_spec(path)
        for _, values in spec.parameters:
            assert len(values) <= MAX_VALUES
        assert len(spec.points()) <= MAX_POINTS

    succeeds_or_names(path, read)


@given(flags=st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(st.text(max_size=40), st.sampled_from(["--load=x.so", "-o", "--iree-hal-target-device=x",
                                                              "--a=" + "b" * 5000, "--", "-"])), max_size=50)))
def test_variant_flags(flags):
    where = Path("/nonexistent/ws/manifest.json")
    try:
        out = parse_flags(flags, where)
    except StudioError as exc:
        assert "\n" not in str(exc) and exc.path == where
    else:
        assert all(isinstance(f, str) and f.startswith("-") for f in out)


CSV = ("model,point,sram.size_kib,status,reason,cycles,energy_pj,meets_constraints,violations,key\n"
       "m.mlir,0,64,ok,,1200,3.5,true,,abc\nm.mlir,1,128,infeasible,too big,,,false,,def\n")


@FIXTURES
@given(data=byte_mutations(CSV.encode()))
def test_results_csv(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("csv") / "results.csv"
    path.write_bytes(data)
    succeeds_or_names(path, lambda: read_table(path))


PROFILE = "\n".join([
    '{"record_type":"host_execution_event","op":"dispatch","key":"d0","start_host_time_ns":10,'
    '"end_host_time_ns":30,"duration_ns":20,"valid":true}',
    '{"record_type":"host_execution_event","op":"dispatch","key":"d1","start_host_time_ns":40,'
    '"end_host_time_ns":90,"duration_ns":50}',
    '{"record_type":"queue_event","op":"barrier"}'])


@given(data=byte_mutations(PROFILE.encode()), value=st.sampled_from(HOSTILE_VALUES))
def test_measured_profile_records(data, value):
    path = Path("/nonexistent/profile.jsonl")
    text = data.decode("utf-8", "replace")
    for candidate in (text, PROFILE.replace("20", __import__("json").dumps(value), 1)):
        try:
            rows = parse_profile(candidate, path)
        except StudioError as exc:
            assert "\n" not in str(exc) and exc.path == path
        else:
            assert all(isinstance(r.key, str) and r.duration_ns >= 0 for r in rows)


def test_the_seeds_are_valid(tmp_path):
    """The mutations start from inputs the readers accept (else the properties prove little)."""
    (tmp_path / "model.mlir").write_text("module {}\n")
    (tmp_path / "sweep.toml").write_text(SPEC)
    points = load_spec(tmp_path / "sweep.toml").points()  # 50 samples of 6 x 3 x 3 x 2 combinations, unique
    assert tomllib.loads(SPEC) and 0 < len(points) <= 50 and len({p.values for p in points}) == len(points)
    (tmp_path / "results.csv").write_text(CSV)
    assert [r["point"] for r in read_table(tmp_path / "results.csv")] == [0, 1]
    assert [m.duration_ns for m in parse_profile(PROFILE)] == [20, 50]
    assert parse_flags("--iree-opt-level=O2", tmp_path) == ["--iree-opt-level=O2"]
    assert os.path.exists(tmp_path / "sweep.toml")
