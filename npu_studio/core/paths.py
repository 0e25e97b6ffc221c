"""The folders NPU Studio keeps its own files in, outside the workspaces the user names.

- config (user targets): $NPU_STUDIO_CONFIG, else $XDG_CONFIG_HOME/npu-studio, else ~/.config/npu-studio
- cache (built NPU plugins): $XDG_CACHE_HOME/npu-studio, else ~/.cache/npu-studio
- workspaces (a model's default workspace): $NPU_STUDIO_HOME, else <cache>/workspaces; sweep results
  without --out go into <workspaces>/sweeps
- the dispatch index cache: <cache>/dispatch-index-cache, never beside $NPU_STUDIO_HOME
  (which may be a shared folder: the cache holds pickles)

Read from the environment on every call, so a test (or a user) that sets a
variable sees it at once.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_FOLDER = "npu-studio"


def config_dir() -> Path:
    env = os.environ.get("NPU_STUDIO_CONFIG")
    if env:
        return Path(env)
    return _xdg("XDG_CONFIG_HOME", ".config") / APP_FOLDER


def cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache") / APP_FOLDER


def workspaces_dir() -> Path:
    """Where workspaces go unless told otherwise."""
    env = os.environ.get("NPU_STUDIO_HOME")
    if env:
        return Path(env)
    return cache_dir() / "workspaces"


def sweeps_dir() -> Path:
    """Where a sweep's results go unless told otherwise (`sweep SPEC` without --out, the app's Run sweep)."""
    return workspaces_dir() / "sweeps"


def dispatch_index_cache_dir() -> Path:
    """In the user's own cache: its entries are unpickled, so it must be a folder nobody else writes."""
    return cache_dir() / "dispatch-index-cache"


def _xdg(variable: str, fallback: str) -> Path:
    return Path(os.environ.get(variable) or Path.home() / fallback)
