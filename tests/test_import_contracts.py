"""The layering contracts in pyproject.toml ([tool.importlinter]), checked with import-linter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(config: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([str(LINT_IMPORTS), "--config", str(config), "--no-cache"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_core_has_no_qt_and_the_cli_no_gui():
    proc = lint_imports(REPO / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_a_broken_contract_is_reported(tmp_path):
    # The same tool on a contract the code breaks (the GUI imports Qt): proves the check looks at real imports.
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["npu_studio"]\ninclude_external_packages = true\n'
        '[[tool.importlinter.contracts]]\nname = "ui without Qt"\ntype = "forbidden"\n'
        'source_modules = ["npu_studio.ui"]\nforbidden_modules = ["PySide6"]\n')
    proc = lint_imports(config)
    assert proc.returncode == 1 and "ui without Qt BROKEN" in proc.stdout, proc.stdout + proc.stderr
