"""core/paths.py: the one place the config, cache and workspace folders come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_studio.core import paths

VARIABLES = ("NPU_STUDIO_CONFIG", "NPU_STUDIO_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No variable of ours set, and a home of the test's own."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def test_without_variables_the_folders_are_under_home(bare, tmp_path):
    home = tmp_path / "home"
    assert paths.config_dir() == home / ".config" / "npu-studio"
    assert paths.cache_dir() == home / ".cache" / "npu-studio"
    assert paths.workspaces_dir() == home / ".cache" / "npu-studio" / "workspaces"
    assert paths.dispatch_index_cache_dir() == home / ".cache" / "npu-studio" / "dispatch-index-cache"


def test_xdg_variables_move_config_and_cache(bare, tmp_path):
    bare.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    bare.setenv("XDG_CACHE_HOME", str(tmp_path / "xk"))
    assert paths.config_dir() == tmp_path / "xc" / "npu-studio"
    assert paths.cache_dir() == tmp_path / "xk" / "npu-studio"
    assert paths.workspaces_dir() == tmp_path / "xk" / "npu-studio" / "workspaces"


def test_empty_variables_count_as_unset(bare, tmp_path):
    for name in VARIABLES:
        bare.setenv(name, "")
    assert paths.config_dir() == tmp_path / "home" / ".config" / "npu-studio"
    assert paths.workspaces_dir() == tmp_path / "home" / ".cache" / "npu-studio" / "workspaces"


def test_our_own_variables_come_first(bare, tmp_path):
    bare.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    bare.setenv("XDG_CACHE_HOME", str(tmp_path / "xk"))
    bare.setenv("NPU_STUDIO_CONFIG", str(tmp_path / "cfg"))
    bare.setenv("NPU_STUDIO_HOME", str(tmp_path / "ws"))
    assert paths.config_dir() == tmp_path / "cfg"
    assert paths.workspaces_dir() == tmp_path / "ws"
    # in the user's own cache, never beside $NPU_STUDIO_HOME (a shared /tmp home: the cache holds pickles)
    assert paths.dispatch_index_cache_dir() == tmp_path / "xk" / "npu-studio" / "dispatch-index-cache"
    assert paths.cache_dir() == tmp_path / "xk" / "npu-studio"  # plugins stay in the user cache


def test_every_user_of_a_folder_asks_paths(bare, tmp_path):
    from npu_studio.core.npu.target import target_store
    from npu_studio.core.npu.hal import plugin_build
    from npu_studio.core.workspace.workspace import default_workspace_for

    bare.setenv("NPU_STUDIO_CONFIG", str(tmp_path / "cfg"))
    bare.setenv("NPU_STUDIO_HOME", str(tmp_path / "ws"))
    bare.setenv("XDG_CACHE_HOME", str(tmp_path / "xk"))
    assert target_store.user_targets_dir() == tmp_path / "cfg" / "targets"
    assert plugin_build.cache_root() == tmp_path / "xk" / "npu-studio" / "plugins"
    assert default_workspace_for(Path("/models/mlp.onnx")).parent == tmp_path / "ws"
