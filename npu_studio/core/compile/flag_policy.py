"""The one check every extra iree-compile flag passes, typed or recorded in a workspace, before any compiler sees it.

iree-compile's flags can load code into the compiler (`--load-pass-plugin=`, `--iree-load-plugin=`),
run another program (`--iree-llvmcpu-embedded-linker-path=`, `--iree-hal-preprocess-executables-with=`)
or write files anywhere (`--mlir-print-ir-tree-dir=`, `--iree-flow-dump-dispatch-graph-output-file=`).
A build variant's flags come from its manifest, which may come from someone else, so:

- refused always (`LOADS_OR_RUNS`): a flag that loads a library, a plugin or bitcode, or names a
  program to run or the folders such things are looked up in;
- a flag whose name says it takes a file or folder (`TAKES_PATH`) must name one inside the
  workspace, by an absolute path (a relative one would be the compiler's current folder);
- a flag is `-name` or `--name[=value]`, a name of letters, digits and `-_.`, with no NUL or newline.

`check(flags, root=None)` raises FlagRefused (a StudioError, one line naming the flag and the
rule); without a workspace `root` only the first and last rules apply. It never runs anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import StudioError

# A name with one of these in it loads code into the compiler or the module, or runs a program.
LOADS_OR_RUNS = ("plugin", "linker", "preprocess-executables-with", "object-search-path", "link-bitcode",
                 "transform-dialect-library", "-bc-dir", "tool-path")
LOAD_PREFIXES = ("--load", "-load")  # --load, --load-pass-plugin, --load-dialect-plugin, ...
# A name with one of these in it takes a file or a folder.
TAKES_PATH = ("dump", "-to", "-from", "output", "-dir", "directory", "file", "path", "prefix", "reproducer",
              "write", "save", "summary", "substitute", "spec", "library", "remarks", "-log", "log-")
# ... unless it ends with one of these: it then takes a word (`--mlir-output-format=json`).
NOT_A_PATH = ("format", "level", "mode", "scope", "version", "limit", "threshold", "size", "count", "filter",
              "verbose", "kind", "type", "name")
MAX_FLAGS = 4096
MAX_FLAG_CHARS = 8192
_NAME = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")


class FlagRefused(StudioError):
    """A flag the policy does not let through; `flag` is the one refused."""

    def __init__(self, where, flag: str, reason: str):
        self.flag = flag
        shown = flag if len(flag) <= 120 else flag[:117] + "..."
        super().__init__(where, f"flag {shown!r} refused: {reason}")


def check(flags, *, root: Path | None = None, where: Path | str | None = None) -> list[str]:
    """`flags` (strings) if every one passes the policy; FlagRefused naming `where` for the first that does not."""
    flags = [str(f) for f in flags]
    if len(flags) > MAX_FLAGS:
        raise StudioError(where, f"{len(flags)} compiler flags; at most {MAX_FLAGS}")
    for flag in flags:
        reason = refusal(flag, root)
        if reason is not None:
            raise FlagRefused(where, flag, reason)
    return flags


def refusal(flag: str, root: Path | None = None) -> str | None:
    """Why `flag` is refused, or None when it passes."""
    if len(flag) > MAX_FLAG_CHARS:
        return f"longer than {MAX_FLAG_CHARS} characters"
    if "\0" in flag or "\n" in flag or "\r" in flag:
        return "holds a NUL or a line break"
    name, has_value, value = flag.partition("=")
    if not _NAME.match(name):
        return "not a compiler flag (-name or --name=value)"
    lowered = name.lower()
    if lowered.startswith(LOAD_PREFIXES) or any(word in lowered for word in LOADS_OR_RUNS):
        return "it loads code into the compiler or runs another program; such flags are never passed"
    if (root is not None and has_value and any(word in lowered for word in TAKES_PATH)
            and not lowered.endswith(NOT_A_PATH)):
        return _path_refusal(value.rsplit("=", 1)[-1], root)  # `name=path` values: the path is the last part
    return None


def _path_refusal(value: str, root: Path) -> str | None:
    if value.lower() in ("", "-", "true", "false") or re.fullmatch(r"-?\d+(\.\d*)?", value):
        return None  # a switch, a number, stdout: nothing written or read elsewhere
    if not os.path.isabs(value):
        return "a file or folder must be named by an absolute path inside the workspace"
    real_root = Path(os.path.realpath(root))
    if not Path(os.path.realpath(value)).is_relative_to(real_root):
        return f"{value} is outside the workspace {real_root}"
    return None
