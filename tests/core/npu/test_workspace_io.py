"""run_for_workspace and target edits on a compiled workspace (no Qt)."""

from __future__ import annotations

import json

import pytest

from npu_studio.core.npu.store import workspace_io as io
from npu_studio.core.npu.program.npu_dialect import from_mlir, to_mlir
from npu_studio.core.npu.program.npu_ir import NpuProgram
from npu_studio.core.npu.program.npu_ir import NpuError
from npu_studio.core.npu.plan.passes import run_npu_pipeline
from npu_studio.core.npu.target.target import RESOURCES, TargetError
from npu_studio.core.workspace.workspace import Workspace
from tests.zoo_cache import zoo_flow


def test_run_for_workspace_writes_json_and_mlir(fresh_example):
    p = io.run_for_workspace(fresh_example)
    assert p.dispatches[0].legal and p.dispatches[0].tile_sizes
    data = json.loads(io.json_path(fresh_example).read_text())
    assert data["format"] == "npu-studio.npu-ir"
    assert NpuProgram.from_json(io.json_path(fresh_example).read_text()) == p
    text = io.mlir_path(fresh_example).read_text()
    assert '"npu.conv"' in text and text == to_mlir(p)
    assert from_mlir(text) == p


def test_other_target_and_failures_keep_earlier_results(fresh_example, tmp_path):
    io.run_for_workspace(fresh_example)
    before = io.json_path(fresh_example).read_text()
    p = io.run_for_workspace(fresh_example, RESOURCES / "tiny.toml")
    assert not p.dispatches[0].legal and "f32" in p.dispatches[0].reason
    tiny = io.json_path(fresh_example).read_text()
    assert tiny != before
    bad = tmp_path / "bad.toml"
    bad.write_text((RESOURCES / "tiny.toml").read_text().replace("rows = 8", "rows = -8"))
    with pytest.raises(TargetError) as e:
        io.run_for_workspace(fresh_example, bad)
    assert str(e.value).startswith(f"{bad}:") and "mac_array.rows" in str(e.value)
    assert io.json_path(fresh_example).read_text() == tiny


def test_no_flow_snapshot_is_an_npu_error(tmp_path):
    from npu_studio.core.workspace.manifest import Manifest

    ws = Workspace(tmp_path, Manifest(source="source/x.onnx", origin="", imported="imported.mlir",
                                      target="llvm-cpu"))
    with pytest.raises(NpuError, match="no flow snapshot"):
        io.run_for_workspace(ws)


def test_the_workspace_records_the_target_it_was_built_with(fresh_example, tmp_path):
    assert io.recorded_target(fresh_example) is None
    mine = tmp_path / "mine.toml"
    mine.write_text((RESOURCES / "tiny.toml").read_text())
    io.run_for_workspace(fresh_example, mine)
    rec = io.recorded_target(fresh_example)
    assert rec.origin == mine and rec.name == "npu-tiny" and rec.path.read_text() == mine.read_text()
    # The original changes afterwards: the workspace keeps what it was built with,
    # and a re-run with its copy keeps naming where that came from.
    mine.write_text((RESOURCES / "default.toml").read_text())
    again = Workspace.open(fresh_example.root)
    assert io.recorded_target(again).name == "npu-tiny"
    assert io.run_for_workspace(again, io.recorded_target(again).path).target.name == "npu-tiny"
    assert io.recorded_target(again).origin == mine


def test_dispatch_line_ranges_cover_exactly_each_dispatchs_tasks(example_flow, tiny_f32_target):
    for flow, target in ((example_flow, None), (zoo_flow("resnet50"), None),
                         (example_flow, tiny_f32_target)):
        p = run_npu_pipeline(flow, target)
        text = to_mlir(p)
        lines = text.splitlines()
        ranges = io.dispatch_line_ranges(text)
        assert sorted(ranges) == [d.index for d in p.dispatches]
        for d, (first, last) in ranges.items():
            ids = [int(s.split("=")[0].strip()[2:]) for s in lines[first - 1:last]
                   if s.startswith("  %t")]
            assert ids == [t.id for t in p.tasks_of(d)]
            assert lines[last - 1].startswith("  })") and f"dispatch = {d} : i64" in lines[last - 1]
