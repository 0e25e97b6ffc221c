"""Executable substitutions carried into another build of the same program, fitted to its buffers.

The builds the debugging tools make (the one-function-per-dispatch module,
a build with dispatch tensor tracing, a build broken after a dispatch) lay
their buffers out otherwise than the workspace's build, so a substituted
executable taken as it is reads and writes the wrong bytes there. Before
such a build, `rebase_flags` compiles it up to the phase where IREE swaps
executables in, with that build's own executables dumped and no
substitution, fits each substituted text to the dump of the same
executable (`ir/executable_interface.rebase`: offsets, binding flags,
layouts), and hands back the substitution flags pointing at the fitted
texts. A substitution that cannot be fitted is left out of that build,
with a note saying why; it is never applied unfitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..compile.compiler import EXECUTABLE_DUMPS
from ..compile.toolchain import compile_failure
from ..errors import StudioError
from ..ir.executable_interface import NotRebasable, rebase
from ..workspace.substitutions import FLAGS, SOURCE
from .catalog import executable_names

_KIND_OF_FLAG = {flag: kind for kind, flag in FLAGS.items()}
# The phase whose end swaps each kind in, and where IREE dumps the executables at that point.
_PHASE = {SOURCE: "executable-sources"}
_DUMP = {SOURCE: "sources"}
_LAST = "executable-configurations"


@dataclass
class Rebased:
    flags: list[str]  # a substitution flag per fitted text (the other flags given are not in it)
    notes: list[str] = field(default_factory=list)  # one line per substitution: fitted, or left out and why
    left_out: list[str] = field(default_factory=list)  # names of the executables not substituted


def substitution_flags(flags: Sequence[str]) -> list[tuple[str, str, Path]]:
    """(kind, executable name, file) of every --iree-hal-substitute-executable-* flag in `flags`."""
    found = []
    for flag in flags:
        head, _, rest = flag.partition("=")
        if head in _KIND_OF_FLAG and "=" in rest:
            name, _, path = rest.partition("=")
            found.append((_KIND_OF_FLAG[head], name, Path(path)))
    return found


def without_substitutions(flags: Sequence[str]) -> list[str]:
    return [f for f in flags if f.partition("=")[0] not in _KIND_OF_FLAG]


def _dumped(folder: Path) -> dict[str, Path]:
    """Each dumped executable's file, by its hal.executable symbol."""
    found = {}
    for path in sorted(folder.glob("*.mlir")) if folder.is_dir() else []:
        for name, _, _ in executable_names(path.read_text(encoding="utf-8")):
            found[name] = path
    return found


def rebase_flags(command: Sequence[str], flags: Sequence[str], work: Path, *, what: str,
                 rename: Callable[[str], str] | None = None, timeout: float = 900) -> Rebased:
    """The substitution flags among `flags`, each fitted to the build `command` makes.

    `command`: the target build's iree-compile argument list (input, target
    and `--compile-from`, the build's own flags), without output, without
    `--compile-to` and without substitutions. The fitted texts are written
    under `work`, which must outlive the build that reads them. `what` names
    the target build in the notes; `rename` gives an executable's name in
    it when that differs (its symbols are renamed in the fitted text).
    StudioError when the target build does not compile as far as the swap.
    """
    subs = substitution_flags(flags)
    if not subs:
        return Rebased([])
    kinds = {k for k, _, _ in subs}
    last = _LAST if any(k != SOURCE for k in kinds) else _PHASE[SOURCE]
    dumps = work / "dumps"
    work.mkdir(parents=True, exist_ok=True)
    cmd = [*command, f"--compile-to={last}", *(f"{EXECUTABLE_DUMPS[k]}={dumps / k}" for k in EXECUTABLE_DUMPS
                                                 if k != "benchmarks"),
           "-o", str(work / "upto.mlir")]
    why = compile_failure(cmd, timeout)
    if why is not None:
        raise StudioError(None, f"{what} does not compile: {why}")
    targets = {k: _dumped(dumps / _DUMP.get(k, "configurations")) for k in kinds}
    result = Rebased([])
    fitted_dir = work / "fitted"
    fitted_dir.mkdir(parents=True, exist_ok=True)
    for kind, name, path in subs:
        theirs = rename(name) if rename is not None else name
        target = targets[kind].get(theirs)
        try:
            if target is None:
                raise NotRebasable(f"{what} has no executable @{theirs}")
            text = path.read_text(encoding="utf-8").replace(name, theirs)  # its exports start with its name
            text = rebase(text, target.read_text(encoding="utf-8"), theirs)
        except (NotRebasable, OSError) as exc:
            result.left_out.append(name)
            result.notes.append(f"executable {name}: its substitution is left out of {what} ({exc})")
            continue
        fitted = fitted_dir / f"{theirs}.{kind}.mlir"
        fitted.write_text(text, encoding="utf-8")
        result.flags.append(f"{FLAGS[kind]}={theirs}={fitted}")
        result.notes.append(f"executable {name}: substituted in {what}, fitted to its buffer layout")
    return result
