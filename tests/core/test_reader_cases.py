"""The reader failures fuzzing found (issue 25), each through the CLI: exit 2, one line naming the file.

NPU program JSON (`simulate FILE`): nesting 100,000 deep, bytes that are not UTF-8, integers past
int64 in ops, bytes, tile sizes, a dispatch or the target, and `bytes` = 2^63 - 1 (which once ran to
exit 0 reporting a negative byte count). Workspace manifest (`run WS`): deep nesting, a NUL or a lone
surrogate in a path, a 5,000-character file name.
"""

from __future__ import annotations

import json
import shutil

import pytest

from npu_studio.cli import main

INT64_MAX = (1 << 63) - 1


@pytest.fixture(scope="module")
def program_text(example_workspace, tmp_path_factory):
    path = tmp_path_factory.mktemp("program") / "p.npu.json"
    assert main(["npu", str(example_workspace.root), "--json", str(path)]) == 0
    return path.read_text()


def _set_first_step(field, value):
    def change(p):
        p["tasks"][0]["steps"][0][field] = value
    return change


def _set(path, value):
    def change(p):
        node = p
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


PROGRAM_CASES = {
    "deep-nesting": lambda text: '{"format": "npu-studio.npu-ir", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "deep-nesting-in-tasks": lambda text: text.replace('"tasks": [', '"tasks": [' + "[" * 50_000 + "]" * 50_000
                                                       + ",", 1),
    "not-utf8": lambda text: text[:100].encode().decode() + "\udcff" + text[100:],
    "ops-past-int64": _set_first_step("ops", 1 << 64),
    "bytes-past-int64": _set_first_step("bytes", -(1 << 65)),
    "bytes-int64-max": _set_first_step("bytes", INT64_MAX),
    "ops-int64-max": _set_first_step("ops", INT64_MAX),
    "tile-size-past-int64": _set(("tasks", 0, "tile_sizes", 0), 1 << 70),
    "dispatch-past-int64": _set(("tasks", 0, "dispatch"), 1 << 64),
    "dispatch-flops-past-int64": _set(("dispatches", 0, "flops"), 1 << 80),
    "target-past-int64": _set(("target", "dma_channels"), 1 << 64),
    "target-channels-absurd": _set(("target", "dma_channels"), 1_000_000),
}


@pytest.mark.parametrize("case", list(PROGRAM_CASES))
def test_bad_program_files_are_one_line(case, program_text, tmp_path, capsys):
    change = PROGRAM_CASES[case]
    if case in ("deep-nesting", "deep-nesting-in-tasks", "not-utf8"):
        data = change(program_text).encode("utf-8", "surrogateescape")
    else:
        program = json.loads(program_text)
        change(program)
        data = json.dumps(program).encode()
    path = tmp_path / "p.npu.json"
    path.write_bytes(data)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert str(path) in line and "Traceback" not in err, line
    assert "-9223372036854775808" not in line


def manifest_case(change):
    def make(ws):
        data = json.loads((ws / "manifest.json").read_text())
        text = change(data)
        (ws / "manifest.json").write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return make


MANIFEST_CASES = {
    "deep-nesting": manifest_case(lambda d: json.dumps({**d, "extra": "@"}).replace(
        '"@"', "[" * 100_000 + "]" * 100_000)),
    "nul-in-path": manifest_case(lambda d: json.dumps({**d, "vmfb": "module\u0000.vmfb"})),
    "nul-in-source": manifest_case(lambda d: json.dumps({**d, "source": "source/\u0000x.onnx"})),
    "lone-surrogate-in-path": manifest_case(lambda d: json.dumps({**d, "vmfb": "x.vmfb"}).replace(
        '"x.vmfb"', '"\\ud800.vmfb"')),
    "lone-surrogate-in-phase": manifest_case(lambda d: json.dumps(d).replace(
        '"phases/06.flow.mlir"', '"phases/\\udfff.mlir"')),
    "5000-character-name": manifest_case(lambda d: json.dumps({**d, "vmfb": "v" * 5000 + ".vmfb"})),
    "5000-character-folder": manifest_case(lambda d: json.dumps({**d, "source": "s" * 5000 + "/m.onnx"})),
}


@pytest.mark.parametrize("case", list(MANIFEST_CASES))
def test_bad_manifests_are_one_line(case, example_workspace, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    MANIFEST_CASES[case](ws)
    before = (ws / "manifest.json").read_bytes()
    assert main(["run", str(ws)]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert str(ws / "manifest.json") in line and "Traceback" not in err, line
    assert (ws / "manifest.json").read_bytes() == before
