"""Property tests of every reader of a file a user may hand us: it succeeds or raises StudioError naming
the file. Nothing else may escape (KeyError, TypeError, OverflowError, RecursionError, UnicodeError, ...).

Hypothesis mutates a valid file of each kind: truncation, byte flips and insertions, invalid UTF-8, and
for JSON and TOML a value replaced by a wrong type, a huge or negative number, NaN, or nesting 100,000
deep; for the NPU program also dependency cycles. `make test` runs a bounded number of examples with a
fixed seed (the "bounded" profile); `make fuzz` runs the same strategies for minutes ("fuzz" profile).
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_studio.cli import main
from npu_studio.core.compile.importer import check_model_file
from npu_studio.core.errors import StudioError
from npu_studio.core.ir.dispatch_index.indexing import index_file
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.sim.results import SimResult
from npu_studio.core.npu.store.sim_store import load_program
from npu_studio.core.npu.target.target import load_target
from npu_studio.core.workspace.manifest import MANIFEST, Manifest

from ..conftest import EXAMPLE, REPO

settings.register_profile("bounded", max_examples=40, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("NPU_STUDIO_FUZZ_PROFILE", "bounded"))
FIXTURES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_VALUES = [1 << 63, (1 << 64) + 1, -(1 << 70), 10 ** 30, -1, 0, 2 ** 53 + 1, 1.5, -0.0, "x", "", None, True,
                  [], {}, [1, [2, [3]]], {"a": {"b": 1}}, "\udcff", "\u0000", "a" * 5000]


# -- mutations ----------------------------------------------------------------------------------

@st.composite
def byte_mutations(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "bad-utf8", "splice"]))
    if kind == "truncate":
        return bytes(data[:draw(st.integers(0, max(len(data) - 1, 0)))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    at = draw(st.integers(0, len(data)))
    if kind == "insert":
        return bytes(data[:at]) + draw(st.binary(min_size=1, max_size=64)) + bytes(data[at:])
    if kind == "bad-utf8":
        return bytes(data[:at]) + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"])) + bytes(data[at:])
    end = draw(st.integers(at, len(data)))  # a chunk repeated
    return bytes(data[:end]) + bytes(data[at:end]) * draw(st.integers(1, 50)) + bytes(data[end:])


def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    yield path


@st.composite
def json_mutations(draw, seed: dict) -> bytes:
    data = json.loads(json.dumps(seed))
    paths = list(_leaves(data))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent = data
        try:
            for p in path[:-1]:
                parent = parent[p]
            kind = draw(st.sampled_from(["value", "delete", "deep", "nan"]))
            if kind == "delete" and isinstance(parent, dict):
                del parent[path[-1]]
            elif kind == "deep":
                parent[path[-1]] = "@@DEEP@@"
            elif kind == "nan":
                parent[path[-1]] = draw(st.sampled_from(["@@NaN@@", "@@Infinity@@", "@@1e999@@"]))
            else:
                parent[path[-1]] = draw(st.sampled_from(HOSTILE_VALUES))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this place
    text = json.dumps(data)
    text = text.replace('"@@DEEP@@"', DEEP)
    for word in ("NaN", "Infinity", "1e999"):
        text = text.replace(f'"@@{word}@@"', word)
    return text.encode("utf-8", "surrogatepass")


def either(seed_bytes: bytes, seed_json: dict | None = None):
    strategies = [byte_mutations(seed_bytes)]
    if seed_json is not None:
        strategies.append(json_mutations(seed_json))
    return st.one_of(strategies)


def succeeds_or_names(path, read) -> None:
    try:
        read()
    except StudioError as exc:
        message = str(exc)
        assert "\n" not in message
        assert exc.path is not None and os.fspath(exc.path) in (str(path), str(path.parent)), message


# -- the seeds: valid files of each kind --------------------------------------------------------

@pytest.fixture(scope="module")
def seeds(example_workspace, tmp_path_factory):
    folder = tmp_path_factory.mktemp("seeds")
    ws = folder / "ws"  # a copy: npu and simulate with --target write into the workspace
    shutil.copytree(example_workspace.root, ws)
    program, result = folder / "p.npu.json", folder / "s.json"
    assert main(["simulate", str(ws), "--target", "tiny", "--json", str(result)]) == 0
    assert main(["npu", str(ws), "--target", "tiny", "--json", str(program)]) == 0
    return {
        "program": program.read_bytes(),
        "result": result.read_bytes(),
        "target": (REPO / "resources" / "targets" / "tiny.toml").read_bytes(),
        "manifest": (example_workspace.root / MANIFEST).read_bytes(),
        "onnx": EXAMPLE.read_bytes(),
        "flow": example_workspace.snapshot_path("flow").read_bytes(),
    }


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- the readers --------------------------------------------------------------------------------

@FIXTURES
@given(data=st.data())
def test_npu_program_reader(seeds, tmp_path, data):
    content = data.draw(st.one_of(either(seeds["program"], json.loads(seeds["program"])),
                                  dependency_cycles(json.loads(seeds["program"]))))
    path = write(tmp_path, "p.npu.json", content)
    succeeds_or_names(path, lambda: NpuProgram.load(path))

    def load_and_simulate():
        simulate(load_program(path))
    succeeds_or_names(path, load_and_simulate)


@st.composite
def dependency_cycles(draw, program: dict) -> bytes:
    tasks = program["tasks"]
    a = draw(st.integers(0, len(tasks) - 1))
    b = draw(st.integers(0, len(tasks) - 1))
    tasks = json.loads(json.dumps(tasks))
    tasks[a]["deps"] = sorted({*tasks[a]["deps"], tasks[b]["id"]})
    tasks[b]["deps"] = sorted({*tasks[b]["deps"], tasks[a]["id"]})
    if draw(st.booleans()):
        tasks[a]["deps"].append(draw(st.sampled_from([-1, len(tasks) + 5, 1 << 62])))
    return json.dumps({**program, "tasks": tasks}).encode()


@FIXTURES
@given(data=st.data())
def test_simulation_result_reader(seeds, tmp_path, data):
    content = data.draw(either(seeds["result"], json.loads(seeds["result"])))
    path = write(tmp_path, "s.json", content)
    succeeds_or_names(path, lambda: SimResult.load_json(path))


@FIXTURES
@given(data=st.data())
def test_target_reader(seeds, tmp_path, data):
    seed = tomllib.loads(seeds["target"].decode())
    content = data.draw(st.one_of(byte_mutations(seeds["target"]), toml_mutations(seed)))
    path = write(tmp_path, "t.toml", content)
    succeeds_or_names(path, lambda: load_target(path))


@st.composite
def toml_mutations(draw, seed: dict) -> bytes:
    """A key of the target set to a hostile value (TOML has no null: those become a string)."""
    table = draw(st.sampled_from([k for k, v in seed.items() if isinstance(v, dict)]))
    key = draw(st.sampled_from(sorted(seed[table])))
    value = draw(st.sampled_from([1 << 62, 1 << 53, -(1 << 40), 10 ** 6, 0, -1, "nan", "inf", '"x"', "[]",
                                  "{ a = 1 }", "[[1], [2]]", "true", "1e999"]))
    return _replace_toml(seed, table, key, str(value)).encode()


def _replace_toml(seed: dict, table: str, key: str, value: str) -> str:
    out = []
    for name, v in seed.items():
        if not isinstance(v, dict):
            out.append(f"{name} = {json.dumps(v)}")
    for name, v in seed.items():
        if isinstance(v, dict):
            out.append(f"[{name}]")
            for k, x in v.items():
                if isinstance(x, dict):
                    continue
                out.append(f"{k} = {value if (name, k) == (table, key) else json.dumps(x)}")
    return "\n".join(out) + "\n"


@FIXTURES
@given(data=st.data())
def test_manifest_reader(seeds, tmp_path, data):
    content = data.draw(either(seeds["manifest"], json.loads(seeds["manifest"])))
    path = write(tmp_path, MANIFEST, content)
    succeeds_or_names(path, lambda: Manifest.load(tmp_path))


@FIXTURES
@given(data=st.data())
def test_onnx_wire_reader(seeds, tmp_path, data):
    path = write(tmp_path, "m.onnx", data.draw(byte_mutations(seeds["onnx"])))
    succeeds_or_names(path, lambda: check_model_file(path))


@settings(FIXTURES, max_examples=max(FIXTURES.max_examples // 4, 5))  # each parse costs ~50 ms
@given(data=st.data())
def test_mlir_snapshot_reader(seeds, tmp_path, data):
    path = write(tmp_path, "06.flow.mlir", data.draw(byte_mutations(seeds["flow"])))
    succeeds_or_names(path, lambda: index_file(path, "flow"))
