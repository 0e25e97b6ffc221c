"""run_for_workspace and target edits on a compiled workspace (no Qt)."""

from __future__ import annotations

import json

import pytest
from flowgen import flow_snapshot, zoo_model

from npu_studio.core.npu import workspace_io as io
from npu_studio.core.npu.npu_dialect import from_mlir, to_mlir
from npu_studio.core.npu.npu_ir import NpuProgram
from npu_studio.core.npu.passes import NpuError, run_npu_pipeline
from npu_studio.core.npu.target import RESOURCES, TargetError
from npu_studio.core.workspace import Workspace


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
    from npu_studio.core.workspace import Manifest

    ws = Workspace(tmp_path, Manifest(source="source/x.onnx", origin="", imported="imported.mlir",
                                      target="llvm-cpu"))
    with pytest.raises(NpuError, match="no flow snapshot"):
        io.run_for_workspace(ws)


def test_edits_of_bundled_targets_go_into_the_workspace(fresh_example, tmp_path):
    default = RESOURCES / "default.toml"
    original = default.read_text()
    assert io.is_bundled(default) and not io.is_bundled(tmp_path / "mine.toml")
    dest = io.edit_destination(fresh_example, default)
    assert dest == fresh_example.root / "npu" / "target.toml"
    assert io.edit_destination(None, default) is None
    assert io.edit_destination(None, tmp_path / "mine.toml") == tmp_path / "mine.toml"
    edited = original.replace('name = "npu-mid"', 'name = "npu-edited"')
    assert io.save_target_text(edited, default, dest) == dest
    assert dest.read_text() == edited and default.read_text() == original
    assert io.run_for_workspace(fresh_example, dest).target.name == "npu-edited"
    with pytest.raises(OSError):
        io.save_target_text(original, default, default)


def test_invalid_target_text_is_not_written(tmp_path):
    dest = tmp_path / "t.toml"
    dest.write_text("old")
    text = (RESOURCES / "tiny.toml").read_text().replace("lanes = 16", "lanes = zero")
    with pytest.raises(TargetError) as e:
        io.save_target_text(text, dest, dest)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "lanes = zero" in s)
    assert e.value.line == line and e.value.key == "<syntax>"
    text = (RESOURCES / "tiny.toml").read_text().replace("lanes = 16", "lanes = 0")
    with pytest.raises(TargetError) as e:
        io.save_target_text(text, dest, dest)
    assert f"{dest}:{line}: vector.lanes:" in str(e.value)
    assert dest.read_text() == "old"


def test_dispatch_line_ranges_cover_exactly_each_dispatchs_tasks(example_flow, tiny_f32_target):
    for flow, target in ((example_flow, None), (flow_snapshot(zoo_model("resnet50")), None),
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
