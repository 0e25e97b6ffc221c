"""Every integer key of a target file has a documented range, checked at load, naming the file and key."""

from __future__ import annotations

import json
import random
import re
import shutil

import pytest

from npu_studio.cli import main
from npu_studio.core.errors import StudioError
from npu_studio.core.npu.target import target as target_module
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.target.target import INT_RANGES, TargetError, parse_target

from ..conftest import REPO

TINY = (REPO / "resources" / "targets" / "tiny.toml").read_text()
DOC = (REPO / "docs" / "npu-target.md").read_text()


def with_value(key: str, value: int, text: str = TINY) -> str:
    """`text` (tiny.toml) with `key` set to `value` (replaced where it is, added to its table otherwise)."""
    *tables, name = key.split(".")
    lines, table, done = text.splitlines(), "", False
    out = []
    for line in lines:
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            if table == ".".join(tables) and not done:
                out.append(f"{name} = {value}")
                done = True
            table = header.group(1)
        elif table == ".".join(tables) and re.match(rf"^\s*{re.escape(name)}\s*=", line):
            line, done = f"{name} = {value}", True
        out.append(line)
    if not done:
        out += ([f"[{'.'.join(tables)}]"] if tables and table != ".".join(tables) else []) + [f"{name} = {value}"]
    text = "\n".join(out) + "\n"
    if not tables:  # a top-level key must come before the first table
        text = f"{name} = {value}\n" + "\n".join(ln for ln in out if not re.match(rf"^{name}\s*=", ln)) + "\n"
    return text


FILE_KEYS = [k for k in INT_RANGES if not k.endswith("*")]


@pytest.fixture(scope="module")
def own_workspace(example_workspace, tmp_path_factory):
    """A private copy of the example workspace: npu and simulate with --target write into it."""
    dest = tmp_path_factory.mktemp("own") / "ws"
    shutil.copytree(example_workspace.root, dest)
    return dest


def out_of_range(key: str, seed: int) -> list[int]:
    """Two values outside the key's range: one just past an edge, one absurd (up to 2^62)."""
    lo, hi = INT_RANGES[key]
    rng = random.Random(f"{key}{seed}")
    return [rng.choice([lo - 1, hi + 1]), rng.choice([1 << 62, 1 << 53, -(1 << 40), hi * 1000 + rng.randrange(9)])]


@pytest.mark.parametrize("key", FILE_KEYS)
def test_a_value_outside_the_range_names_file_and_key(key, tmp_path):
    path = tmp_path / "t.toml"
    for value in out_of_range(key, 1):
        path.write_text(with_value(key, value))
        with pytest.raises(TargetError) as info:
            parse_target(path.read_text(), path)
        message = str(info.value)
        assert str(path) in message and f"{key}:" in message and "out of range" in message, message
        assert "\n" not in message


@pytest.mark.parametrize("key", FILE_KEYS)
def test_both_edges_of_the_range_load(key):
    lo, hi = INT_RANGES[key]
    for value in (lo, hi):
        target = parse_target(with_value(key, value), "edge.toml")
        field = next(f for f, (k, _) in target_module.FIELD_KEYS.items() if k == key)
        factor = target_module.FIELD_KEYS[field][1]
        assert getattr(target, field) == value * factor


def test_vector_function_costs_are_ranged_too():
    lo, hi = INT_RANGES["vector.functions.*"]
    for cost in (lo - 1, hi + 1, 1 << 62):
        text = TINY + f"\n[vector.functions]\nadd = {cost}\n"
        with pytest.raises(TargetError, match=r"vector\.functions\.add: .*out of range"):
            parse_target(text, "f.toml")


@pytest.mark.parametrize("key, value", [("mac_array.rows", 1 << 62), ("sram.size_kib", 1 << 53),
                                        ("dma.channels", 1_000_000)])
def test_the_cli_blames_the_target_file_not_a_snapshot(key, value, own_workspace, tmp_path, capsys):
    path = tmp_path / "absurd.toml"
    path.write_text(with_value(key, value))
    for command in ("npu", "simulate"):
        assert main([command, str(own_workspace), "--target", str(path)]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert f"{path}:" in line and key in line and "Error" not in line, line


def test_every_integer_key_of_the_schema_has_a_range_and_the_doc_lists_them_all():
    int_keys = [key for key, typ, *_ in target_module._SCHEMA if typ is int]
    assert int_keys and [k for k in int_keys if k not in INT_RANGES] == []
    rows = re.findall(r"^\| `([\w.*]+)` \| ([\d,]+) \| ([\d,]+) \|$", DOC, re.M)
    documented = {key: (int(lo.replace(",", "")), int(hi.replace(",", ""))) for key, lo, hi in rows}
    assert documented == INT_RANGES


@pytest.mark.parametrize("field, value", [("dma_channels", 1 << 63), ("mac_rows", 0), ("sram_bytes", 1 << 70),
                                          ("clock_mhz", "fast")])
def test_a_program_file_with_a_target_out_of_range_names_the_file(field, value, own_workspace, tmp_path):
    good = own_workspace / "npu" / "model.npu.json"
    if not good.is_file():
        assert main(["npu", str(own_workspace), "--json", str(tmp_path / "p.npu.json")]) == 0
        good = tmp_path / "p.npu.json"
    data = json.loads(good.read_text())
    data["target"][field] = value
    path = tmp_path / "bad.npu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(StudioError) as info:
        NpuProgram.load(path)
    message = str(info.value)
    assert info.value.path == path and (f"target.{field}" in message or "out of range" in message), message


@pytest.mark.parametrize("edge", [0, 1], ids=["lowest", "highest"])
def test_targets_at_the_edges_plan_and_simulate(edge, own_workspace, tmp_path, capsys):
    """Every key at its lowest (or highest) value at once: the pipeline runs and reports, no overflow."""
    text = TINY
    for key in FILE_KEYS:
        text = with_value(key, INT_RANGES[key][edge], text)
    path = tmp_path / "edge.toml"
    path.write_text(text)
    target = parse_target(text, path)
    assert target.dma_channels == INT_RANGES["dma.channels"][edge]
    assert main(["simulate", str(own_workspace), "--target", str(path), "--json",
                 str(tmp_path / "s.json")]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "s.json").read_text())["dispatches"]
