"""How to start `python -m MODULE` in a fresh process, from a checkout, a venv or a frozen bundle.

In a PyInstaller bundle `sys.executable` is the `npu-studio` launcher itself and
there is no Python interpreter on the machine: the launcher takes
`--run-module MODULE ...` instead of `-m MODULE ...` (handled in cli.main).
"""

from __future__ import annotations

import sys

RUN_MODULE_FLAG = "--run-module"


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def module_command(module: str) -> list[str]:
    """argv that runs `module` as __main__ in a new process."""
    if is_frozen():
        return [sys.executable, RUN_MODULE_FLAG, module]
    return [sys.executable, "-m", module]
