"""The one check every extra iree-compile flag passes, typed or recorded in a workspace, before any compiler sees it.

iree-compile's flags can load code into the compiler (`--load-pass-plugin=`, `--iree-load-plugin=`),
run another program (`--iree-llvmcpu-embedded-linker-path=`, `--iree-hal-preprocess-executables-with=`)
or read and write files anywhere (`--mlir-print-ir-tree-dir=`, `--iree-vm-bytecode-source-listing=`,
`--iree-parameter-import=`). A build variant's flags come from its manifest, which may come from
someone else. A list of path-taking names misses some (`...-spec-filename`, `--iree-parameter-splat`),
so the rule goes by the value each option takes, as iree-compile's own `--help-list-hidden` declares it
(`toolchain.option_table`):

- refused always (`LOADS_OR_RUNS`): a flag that loads a library, a plugin or bitcode, or names a
  program to run or the folders such things are looked up in;
- a switch takes true/false, a number option a number, an option with listed values one of them:
  none of these can name a file;
- an option the bundled iree-compile does not list is refused (it could take the next flag as a value);
- any other value (a string, a file name, a list) is a path: with a workspace `root` it must be an absolute path inside the workspace (each part of
  `scope=path` and of a comma list), unless the option is one of the few known to take a word
  (`WORD_OPTIONS`: target names, CPU features, the dispatch to break at), whose value holds no `/`;
- a value is always given as `--name=value`: LLVM takes the next argument as the value of an option
  given without one, so `--iree-vm-bytecode-source-listing` `-x` would write a file named `-x`;
- a flag is `-name` or `--name[=value]`, a name of letters, digits and `-_.`, with no NUL or newline.

`check(flags, root=None)` raises FlagRefused (a StudioError, one line naming the flag and the
rule); without a workspace `root` the path rule is left out (the caller's own flags). It never runs
anything but the bundled iree-compile's help, once per process.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import StudioError

# A name with one of these in it loads code into the compiler or the module, or runs a program.
LOADS_OR_RUNS = ("plugin", "linker", "preprocess-executables-with", "object-search-path", "link-bitcode",
                 "transform-dialect-library", "-bc-dir", "tool-path", "ptxas", "interactive-channel")
LOAD_PREFIXES = ("--load", "-load")  # --load, --load-pass-plugin, --load-dialect-plugin, ...
# Options declared as a string that take a word, never a file (their values may not hold a `/`).
WORD_OPTIONS = frozenset({
    "iree-hal-target-backends", "iree-hal-target-device", "iree-hal-local-target-device-backends",
    "iree-hal-local-host-device-backends", "iree-hal-default-device", "iree-consteval-jit-target-device",
    "iree-llvmcpu-target-cpu", "iree-llvmcpu-target-cpu-features", "iree-llvmcpu-target-triple",
    "iree-llvmcpu-target-abi", "iree-llvmcpu-target-data-layout", "iree-llvmcpu-vscale-range",
    "iree-llvmcpu-enable-ukernels", "iree-llvmcpu-enable-llvm-ukernels", "iree-input-type",
    "iree-cuda-target", "iree-cuda-target-features", "iree-rocm-target", "iree-rocm-target-features",
    "iree-rocm-enable-ukernels", "iree-vulkan-target", "iree-vulkan-target-features", "iree-gpu-test-target",
    "iree-flow-break-dispatch", "iree-flow-trace-dispatch", "iree-parameter-import-keys",
    "iree-parameter-encoder-output-scope", "mlir-print-ir-after", "mlir-print-ir-before",
})
_NUMBER_KINDS = {"int", "uint", "number", "ulong", "long", "N", "x", "seed", "power of two byte size"}
_WORD_KINDS = {"optimization level"}  # O0..O3 ("<value>" without listed values may be a file: a path)
_BOOLEAN = {"", "true", "false", "1", "0", "TRUE", "FALSE", "True", "False"}
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|0[xX][0-9a-fA-F]+")
_WORD = re.compile(r"[A-Za-z0-9_.+:@,$=\[\]-]*")  # names, features, devices (local[0]): no "/"
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
    bare = name.lstrip("-")
    declared = _declared(bare)
    if declared is None:
        return "iree-compile has no such option (Unknown command line argument: not in iree-compile --help-list-hidden)"
    kind, choices = declared
    if kind is None and not choices:  # a switch
        return None if not has_value or value in _BOOLEAN else "a switch takes true or false"
    if not has_value:
        return "takes a value: give it as NAME=VALUE (the compiler would take the next flag as its value)"
    if choices:
        return None if all(v in choices for v in value.split(",")) else f"expected one of {', '.join(choices)}"
    if kind in _NUMBER_KINDS:
        return None if _NUMBER.fullmatch(value) else "expected a number"
    if kind in _WORD_KINDS or bare in WORD_OPTIONS:
        return None if _WORD.fullmatch(value) else "expected a word (no '/' or spaces)"
    return None if root is None else _path_refusal(value, root)


def _declared(bare: str) -> tuple[str | None, tuple[str, ...]] | None:
    """The value kind and listed values iree-compile declares for an option; None for one it does not
    list; ("string", ()) for every option when its help cannot be read (each value is then a path)."""
    from .toolchain import option_table  # deferred: the table runs iree-compile once

    table = option_table()
    return table.get(bare) if table else ("string", ())


def _path_refusal(value: str, root: Path) -> str | None:
    """Each path in `value` (`scope=path`: the part after the last `=`; a comma list: each item) must be
    absolute and, links resolved, inside the workspace."""
    real_root = Path(os.path.realpath(root))
    for part in value.rsplit("=", 1)[-1].split(","):
        if not os.path.isabs(part):
            return "takes a file or folder: name one by an absolute path inside the workspace"
        if ".." in Path(part).parts or not Path(os.path.realpath(part)).is_relative_to(real_root):
            return f"{part} is outside the workspace {real_root}"
    return None
