"""Shared fixtures. Qt runs offscreen; compiled workspaces are cached per session."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "resources" / "examples" / "single_conv.onnx"


def light_zoo_dir() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light_zoo_models() -> list[Path]:
    return sorted(light_zoo_dir().glob("light_*.onnx"))


@pytest.fixture(scope="session", autouse=True)
def _shared_run_dir(tmp_path_factory):
    """One folder per test run that every xdist worker sees (for tests/zoo_cache.py)."""
    from tests.zoo_cache import RUN_DIR_ENV

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ[RUN_DIR_ENV] = str(shared / "shared")
    # Workspaces made by session fixtures record themselves in a config of the run, never the user's.
    os.environ["NPU_STUDIO_CONFIG"] = str(trusting_config(base / "session-config"))


def trusting_config(folder: Path) -> Path:
    """A config folder whose user trusts every workspace under this test run's temporary folders (the
    copies tests make of compiled workspaces are not "created here"); the workspace trust tests use
    a config without it (tests/core/test_workspace_trust.py)."""
    import json

    from npu_studio.core.workspace.trust import TRUST_FILE

    run_tmp = Path(os.environ["NPU_STUDIO_TEST_RUN_DIR"]).parent
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TRUST_FILE).write_text(json.dumps({"version": 1, "trusted_folders": [str(run_tmp)]}))
    return folder


@pytest.fixture(autouse=True)
def _isolated_workspace_root(tmp_path_factory, monkeypatch):
    # Never write into the real user cache from tests.
    monkeypatch.setenv("NPU_STUDIO_HOME", str(tmp_path_factory.getbasetemp() / "workspaces"))
    # Nor into the user's config folder (user NPU targets): a fresh one per test.
    monkeypatch.setenv("NPU_STUDIO_CONFIG", str(trusting_config(tmp_path_factory.mktemp("config"))))
    # Nor into its cache (the NPU plugin's builds): one per run, shared by the xdist workers.
    from tests.zoo_cache import RUN_DIR_ENV

    monkeypatch.setenv("XDG_CACHE_HOME", str(Path(os.environ[RUN_DIR_ENV]) / "cache"))


@pytest.fixture(scope="session")
def example_workspace(tmp_path_factory):
    """The bundled example, imported and compiled for llvm-cpu once per session.

    Tests that modify a workspace must copy it first (see `fresh_example`).
    """
    from npu_studio.core.workspace.workspace import compile_model

    return compile_model(EXAMPLE, tmp_path_factory.mktemp("example") / "ws")


@pytest.fixture
def fresh_example(example_workspace, tmp_path):
    """A private copy of the compiled example workspace, safe to edit."""
    import shutil

    from npu_studio.core.workspace.workspace import Workspace

    dest = tmp_path / "ws"
    shutil.copytree(example_workspace.root, dest)
    return Workspace.open(dest)
