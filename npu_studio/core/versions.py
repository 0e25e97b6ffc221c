"""What `npu-studio --version` and Help > About say: our version, IREE's compiler's and runtime's."""

from __future__ import annotations


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from .compile.toolchain import ToolchainError, compiler_version

    try:
        own = version("npu-studio")
    except PackageNotFoundError:
        own = "(not installed: no package metadata)"
    try:
        compiler = compiler_version()
    except ToolchainError as exc:
        compiler = f"not found ({exc})"
    from iree.runtime.version import REVISIONS, VERSION

    runtime = f"IREE runtime version {VERSION} @ {REVISIONS.get('IREE', '?')[:7]}"
    return f"npu-studio {own}\n{compiler}\n{runtime}"
