"""A plain install is complete: the wheel, installed with its declared dependencies only (no `test`
extra) into a bare venv, at the lock's versions, runs --self-test and the onnxruntime-backed debugging
commands (`trace`, `simulate --check`).

Unlike test_wheel.py this installs the dependencies for real, so a module the product imports but
pyproject.toml declares only for tests fails here. pip fetches them from PyPI (or its cache; about
20 s here): the machines this suite runs on reach PyPI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_wheel import LEFT_OUT
from ..conftest import REPO

TEST_ONLY = ("pytest", "hypothesis", "import-linter", "scalesim", "pytest-qt", "pytest-xdist")


def run(args, timeout=600, **kw):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{args}: {proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def pins_without_hashes(lock: Path) -> str:
    """The lock's `name==version` lines as a pip constraints file (constraints may not carry hashes)."""
    return "\n".join(m.group(0) for m in re.finditer(r"^[A-Za-z0-9][A-Za-z0-9._-]*==\S+", lock.read_text(), re.M))


@pytest.mark.slow
def test_the_wheel_with_its_declared_dependencies_alone_traces_and_checks(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               NPU_STUDIO_HOME=str(home / "ws"), QT_QPA_PLATFORM="offscreen",
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")))
    where = dict(cwd=tmp_path, env=env)

    src = tmp_path / "src"
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_OUT))
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path / "dist", src], **where)
    (wheel,) = (tmp_path / "dist").glob("npu_studio-*.whl")

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], **where)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(pins_without_hashes(REPO / "requirements" / "venv.lock"))
    python, launcher = venv / "bin" / "python", venv / "bin" / "npu-studio"
    run([python, "-m", "pip", "install", "--quiet", "--only-binary", ":all:", "-c", constraints, wheel], **where)
    listed = run([python, "-m", "pip", "list", "--format=freeze"], **where).stdout.lower()
    assert not [name for name in TEST_ONLY if f"\n{name}==" in f"\n{listed}"], listed  # no test tools crept in

    assert run([launcher, "--self-test"], **where).stdout.splitlines()[-1].startswith("self-test: passed")
    example = run([python, "-c", "import npu_studio.resources as r; print(r.EXAMPLE_MODEL)"], **where).stdout.strip()
    ws = tmp_path / "ws"
    run([launcher, "compile", example, "--workspace", ws], **where)
    traced = run([launcher, "trace", ws], **where).stdout
    assert "vs onnxruntime" in traced and traced.splitlines()[-1] == "OK"
    checked = run([launcher, "simulate", ws, "--check"], **where).stdout
    assert "vs onnxruntime" in checked and checked.splitlines()[-1] == "OK"
