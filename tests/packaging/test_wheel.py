"""The wheel `python -m build` makes installs into a new venv and works there without the
source tree: --version, a compile of the example it carries, and the app's --self-test.

Installing PySide6 and IREE into a new venv takes minutes, so the new venv gets the wheel
alone (--no-deps) and reaches the dependencies through a .pth line to this venv's
site-packages. A .pth line adds a folder to sys.path without running the .pth files
in it, so the editable install of this checkout there is never imported: the test
checks that npu_studio comes from the new venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from npu_studio.core.compile.phases import SNAPSHOT_PHASES

from ..conftest import REPO

LEFT_OUT = (".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis", "workspaces",
            "*.egg-info")


def package_data(package: Path) -> set[str]:
    """Every non-Python file of the package, resources/ included (through the _resources link)."""
    found = set()
    for folder, dirs, files in os.walk(package, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith((".py", ".pyc")):
                found.add(str((Path(folder) / name).relative_to(package.parent)))
    return found


def run(args, **kw):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
def test_wheel_in_a_new_venv_runs_version_compile_and_self_test(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), NPU_STUDIO_HOME=str(home / "ws"),
               QT_QPA_PLATFORM="offscreen")
    where = dict(cwd=tmp_path, env=env)  # not the checkout: nothing of it on sys.path

    src = tmp_path / "src"  # a copy: building writes build/ and *.egg-info next to the sources
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_OUT))
    run([sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", src], **where)
    (wheel,) = (tmp_path / "dist").glob("npu_studio-*.whl")
    assert package_data(REPO / "npu_studio") <= set(zipfile.ZipFile(wheel).namelist())

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], **where)
    python, launcher = venv / "bin" / "python", venv / "bin" / "npu-studio"
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel], **where)
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    **where).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")

    code = "import npu_studio.resources as r; print(r.__file__); print(r.EXAMPLE_MODEL)"
    module_file, example = run([python, "-c", code], **where).stdout.split()
    assert Path(module_file).is_relative_to(site) and Path(example).is_relative_to(site)

    version = run([launcher, "--version"], **where).stdout.splitlines()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert version[0] == f"npu-studio {declared}" and "IREE compiler version" in version[1]

    # The compile and the self-test (which compiles again, in its own workspace) side by side.
    compile_proc = subprocess.Popen([launcher, "compile", example, "--workspace", tmp_path / "ws"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **where)
    self_test = run([launcher, "--self-test"], **where)
    out, err = compile_proc.communicate(timeout=300)
    assert compile_proc.returncode == 0, err
    assert [ln.split()[0] for ln in out.splitlines()[1:1 + len(SNAPSHOT_PHASES)]] == list(SNAPSHOT_PHASES)
    assert self_test.stdout.splitlines()[-1].startswith("self-test: passed")
