"""Locate the IREE tools shipped in the installed Python packages.

Never rely on PATH: the wheel's own binaries match the Python bindings we
parse their output with.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from .. import processes
from ..errors import BadFile


class ToolchainError(RuntimeError):
    """An IREE tool is missing or unusable."""


@functools.cache
def iree_compile() -> Path:
    """Path of the `iree-compile` binary from iree-base-compiler."""
    from iree.compiler.tools.binaries import find_tool

    try:
        return Path(find_tool("iree-compile"))
    except Exception as exc:  # find_tool raises a bare exception type of its own
        raise ToolchainError(
            f"iree-compile not found in iree-base-compiler: {exc}"
        ) from exc


@functools.cache
def compiler_version() -> str:
    """The compiler's own version line, e.g. 'IREE compiler version 3.13.0rc20261016 @ 89ece87'."""
    out = processes.run_child([str(iree_compile()), "--version"]).stdout
    for line in out.splitlines():
        if "compiler version" in line:
            return line.strip()
    return out.strip() or "unknown"


CHECK_SECONDS = 60.0


def check_compiler(path: str | Path) -> tuple[Path, str]:
    """The absolute path of another iree-compile and its version line; BadFile when it is not one.

    Answers from memory for a file not changed since it was last checked (same inode, size, mtime)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise BadFile(path, "no such compiler")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BadFile(path, "is not an executable file")
    real = path.resolve()
    st = real.stat()
    try:
        return _checked_compiler(real, st.st_ino, st.st_size, st.st_mtime_ns)
    except BadFile as exc:
        raise BadFile(path, exc.reason) from None  # named as the user or the manifest gave it


@functools.lru_cache(maxsize=64)
def _checked_compiler(real: Path, _ino: int, _size: int, _mtime_ns: int) -> tuple[Path, str]:
    try:
        done = processes.run_child([str(real), "--version"], timeout=CHECK_SECONDS)
    except OSError as exc:
        raise BadFile(real, f"cannot run it: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise BadFile(real, "did not answer --version; not iree-compile") from None
    version = next((ln.strip() for ln in done.stdout.splitlines() if "IREE compiler version" in ln), None)
    if version is None:
        raise BadFile(real, "is not iree-compile (its --version names no IREE compiler version)")
    return real, version


_OPTION = re.compile(r"^  --?([A-Za-z0-9][A-Za-z0-9_.-]*)(?:=<([^>]*)>)?(?:\s|$)")
_CHOICE = re.compile(r"^    =(\S*)\s")


@functools.cache
def option_table() -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Every option `iree-compile --help-list-hidden` lists: name (no dashes) -> (its value's kind as
    the help writes it, e.g. "string", "uint", None for a switch; the values it lists, if any).
    Empty when the help cannot be read (the flag policy then treats every value as a path)."""
    try:
        text = processes.run_child([str(iree_compile()), "--help-list-hidden"], timeout=CHECK_SECONDS).stdout
    except (OSError, subprocess.SubprocessError, ToolchainError):
        return {}
    table: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    current = None
    for line in text.splitlines():
        option, choice = _OPTION.match(line), _CHOICE.match(line)
        if option:
            current = option.group(1)
            table.setdefault(current, (option.group(2), ()))
        elif choice and current is not None:
            kind, choices = table[current]
            table[current] = (kind, (*choices, choice.group(1)))
        elif line.startswith("  ") and not line.startswith("      "):
            current = None  # an option of a group heading, not a listed value
    return table


def compile_to_phase_names() -> list[str]:
    """Phase names `iree-compile --help` lists for --compile-to, in its order."""
    help_text = processes.run_child([str(iree_compile()), "--help"]).stdout
    names: list[str] = []
    in_option = False
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--compile-to="):
            in_option = True
            continue
        if in_option:
            if not stripped.startswith("="):
                break
            names.append(stripped[1:].split()[0])
    return names


def runtime_tool(name: str) -> Path:
    """Path of a runtime tool shipped in iree-base-runtime (iree-benchmark-module, ...).

    `find_tool` knows only the compiler's tools; the runtime wheel keeps its
    binaries next to `iree._runtime_libs`, where its own launcher scripts look.
    """
    try:
        from iree import _runtime_libs
    except ImportError as exc:
        raise ToolchainError(f"{name} not found: iree-base-runtime is not installed") from exc
    path = Path(_runtime_libs.__path__[0]) / name
    if not path.is_file():
        raise ToolchainError(f"{name} not found in iree-base-runtime ({path.parent})")
    return path


def compile_failure(cmd: list[str], timeout: float) -> str | None:
    """Run an iree-compile command line (killed with us); None when it succeeded, else why not in one
    line: that it ran out of time, or the first error line the compiler printed."""
    try:
        proc = processes.run_child(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"did not finish in {timeout:g} s"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines()
    return lines[0] if lines else f"iree-compile exited with {proc.returncode}"
