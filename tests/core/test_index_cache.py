"""Dispatch indexes kept between sessions (core/workspace/index_cache.py)."""

from __future__ import annotations

import shutil

from npu_studio.core import paths
from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.workspace import index_cache


def test_a_reopened_snapshot_is_not_indexed_again_and_an_edit_is(example_workspace, tmp_path):
    flow = tmp_path / "a" / "06.flow.mlir"
    flow.parent.mkdir()
    shutil.copy(example_workspace.snapshot_path("flow"), flow)
    built = []

    def build(path, phase):
        built.append(path)
        return index_file(path, phase)

    first = index_cache.cached_index(flow, "flow", build)
    again = index_cache.cached_index(flow, "flow", build)
    assert built == [flow]  # the second came from the cache
    assert again.to_json() == first.to_json() == index_file(flow, "flow").to_json()

    moved = tmp_path / "b" / "06.flow.mlir"  # the same text in another workspace
    moved.parent.mkdir()
    shutil.copy(flow, moved)
    assert index_cache.cached_index(moved, "flow", build).path == str(moved) and built == [flow]

    flow.write_text(flow.read_text().replace("flow.executable private", "flow.executable private ", 1))
    index_cache.cached_index(flow, "flow", build)
    assert built == [flow, flow]  # other content: indexed again


def test_a_broken_cache_entry_is_rebuilt(example_workspace, tmp_path):
    flow = example_workspace.snapshot_path("flow")
    key = index_cache.cache_key(flow.read_bytes(), "flow")
    paths.dispatch_index_cache_dir().mkdir(parents=True, exist_ok=True)
    (paths.dispatch_index_cache_dir() / f"{key}.pickle").write_bytes(b"\x80\x05truncated")
    index = index_cache.cached_index(flow, "flow", index_file)
    assert index.to_json() == index_file(flow, "flow").to_json()
