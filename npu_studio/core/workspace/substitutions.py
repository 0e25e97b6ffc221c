"""The executable substitutions a workspace keeps: their records and the flags they add to every compile.

Each substitution is a record in the manifest (`Substitution`) and files under
`substitutions/`: every text that built (NAME.KIND.N.mlir) and, beside it, the
copy the compiler reads (`substitutions/compiler/`, locations blanked so that
errors point at the user's line and column). Every switched-on substitution is
passed to every compile and resume (`active_flags`). Checking and building a
substitution is `core/executables/substitution.py`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..textio import write_text_atomic

SOURCE, CONFIGURATION = "source", "configuration"
KINDS = (SOURCE, CONFIGURATION)
FLAGS = {
    SOURCE: "--iree-hal-substitute-executable-source",
    CONFIGURATION: "--iree-hal-substitute-executable-configuration",
}
FOLDER = "substitutions"


@dataclass
class Substitution:
    name: str  # the hal.executable symbol
    kind: str  # SOURCE or CONFIGURATION
    file: str | None = None  # the text that last built, relative to the workspace
    enabled: bool = True
    draft: str | None = None  # text not built yet (rejected or failed), relative to the workspace
    error: str | None = None  # why the draft did not build
    verdict: dict | None = None  # summary of the last numeric gate (core/run/numeric_gate.py)
    kept_failing: dict | None = None  # the failing verdict the user chose to keep it on with

    @property
    def failed_check(self) -> bool:
        return bool(self.verdict) and not self.verdict.get("passed", True)

    @property
    def undecided(self) -> bool:
        """On in the build although its check failed, and the user has not said to keep it:
        it is not kept silently (the app asks: Keep or Switch off)."""
        return self.applied and self.failed_check and self.kept_failing != self.verdict

    @property
    def applied(self) -> bool:
        return self.enabled and self.file is not None

    @property
    def verdict_word(self) -> str:
        """The last check in a word or two: what the build summary, badges and reports show."""
        if not self.verdict:
            return "not checked"
        if not self.failed_check:
            return "PASS, bit-identical" if self.verdict.get("bit_identical") else "PASS"
        # a flat reference neither passes nor fails (run/numeric_gate.py writes the status)
        word = "CANNOT TELL" if self.verdict.get("status") == "CANNOT TELL" else "FAIL"
        return f"{word}, kept on" if self.kept_failing == self.verdict else word

    def describe(self) -> str:
        """`@name (kind, file, verdict)`: one substitution in a report or a tooltip."""
        return f"@{self.name} ({self.kind}, {self.file}, {self.verdict_word})"


def load(ws) -> list[Substitution]:
    return [Substitution(**d) for d in ws.manifest.substitutions]


def store(ws, subs: list[Substitution]) -> None:
    ws.manifest.substitutions = [asdict(s) for s in subs]
    ws.save()


def find(ws, name: str, kind: str) -> Substitution | None:
    return next((s for s in load(ws) if s.name == name and s.kind == kind), None)


def applied(ws) -> list[Substitution]:
    """The substitutions switched on in the build: what its executables contain besides the compiler's."""
    return [s for s in load(ws) if s.applied]


def undecided_failures(ws) -> list[Substitution]:
    return [s for s in load(ws) if s.undecided]


def keep_failing(ws, name: str, kind: str) -> None:
    """The user keeps the substitution on despite its failed check (this verdict; a new one asks again)."""
    sub = find(ws, name, kind)
    if sub is not None and sub.failed_check:
        sub.kept_failing = dict(sub.verdict)
        update(ws, sub)


def update(ws, sub: Substitution) -> None:
    """Store `sub` in the manifest, replacing the record of the same executable and kind."""
    subs = [s for s in load(ws) if (s.name, s.kind) != (sub.name, sub.kind)]
    store(ws, [*subs, sub])


def compiler_copy(ws, rel: str) -> Path:
    """The file the compiler reads for a substituted text: its `loc(...)`s blanked.

    IREE's dumps carry a `loc(...)` (ONNX node names) on every op, and the
    compiler reports errors at those, not at a line of the file. Blanked to
    spaces, every op gets its own position, which is the same line and
    column in the user's text.
    """
    return ws.root / FOLDER / "compiler" / Path(rel).name


def write_compiler_copy(ws, rel: str, text: str) -> Path:
    from ..ir.mlir_text import blank_locations  # deferred: it loads IREE's MLIR bindings

    path = compiler_copy(ws, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, blank_locations(text, drop_resources=False))
    return path


def active_flags(ws, subs: list[Substitution] | None = None) -> list[str]:
    flags = []
    for s in load(ws) if subs is None else subs:
        if s.applied:
            copy = compiler_copy(ws, s.file)
            if not copy.is_file():  # a workspace written before copies existed, or a lost copy
                write_compiler_copy(ws, s.file, (ws.root / s.file).read_text())
            flags.append(f"{FLAGS[s.kind]}={s.name}={copy}")
    return flags
