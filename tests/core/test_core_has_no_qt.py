"""The core runs headless: importing every core module and the CLI loads no Qt."""

import pkgutil
import subprocess
import sys

import npu_studio.core


def test_core_and_cli_import_no_qt():
    modules = ["npu_studio.cli"] + [
        m.name for m in pkgutil.walk_packages(npu_studio.core.__path__, "npu_studio.core.")
    ] + [f"npu_studio.cli_commands.{n}" for n in ("compile", "resume", "run", "dispatches", "npu")]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "qt = sorted(m for m in sys.modules if m.startswith(('PySide6', 'shiboken6', 'pyqtgraph')))\n"
        "print(','.join(qt))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"Qt loaded by the core: {proc.stdout.strip()}"
    assert len(modules) > 20
