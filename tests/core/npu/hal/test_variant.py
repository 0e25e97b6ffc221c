"""The NPU variant follows the workspace's transaction rules."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil

import pytest

from npu_studio.core.errors import StudioError
from npu_studio.core.npu.hal import variant as variant_mod
from npu_studio.core.npu.hal.variant import build_variant, current_variant
from npu_studio.core.npu.store.workspace_io import run_for_workspace
from npu_studio.core.workspace.workspace import Workspace


def _tree(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_failed_build_leaves_the_workspace_byte_identical(example_workspace, tmp_path, monkeypatch):
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    run_for_workspace(ws)
    good = build_variant(ws)
    before = _tree(ws.root)
    real = variant_mod.build_replacement

    def broken(*args):
        rep = real(*args)
        return dataclasses.replace(rep, text=rep.text.replace("hal.return", "hal.no_such_return"))

    monkeypatch.setattr(variant_mod, "build_replacement", broken)
    with pytest.raises(StudioError):
        build_variant(ws, force=True)
    assert _tree(ws.root) == before
    assert current_variant(ws) == good


def test_variant_names_the_missing_npu_program(example_workspace, tmp_path):
    shutil.copytree(example_workspace.root, tmp_path / "ws")
    ws = Workspace.open(tmp_path / "ws")
    with pytest.raises(StudioError, match="no NPU program; run `npu-studio npu WORKSPACE` first"):
        build_variant(ws)
