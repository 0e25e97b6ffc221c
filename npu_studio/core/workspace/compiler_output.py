"""What the compiler wrote for a phase, even after the user edited its snapshot in place.

Every compile records the SHA-256 of each snapshot it writes (manifest `phases.<phase>.sha256`) and
the phase it started from (`compiled_from`). A snapshot that no longer hashes to its record was
changed by someone else (a text editor writing phases/06.flow.mlir): before it is kept as "the
compiler's original", the compiler's text is made again, with the workspace's own compile options
(installed iree-compile, its backend and checked flags: nothing the workspace names runs), and kept
only if it hashes to the record. Never a wrong original: without a match, none is kept, and a note
says why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..compile.compiler import CompileJob
from ..compile.phases import PHASES, phase_index
from ..errors import StudioError
from .manifest import DONE, EDITED


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class CompilerText:
    """Where the compiler's text of a phase is (None: not known), and a note when that is not the snapshot."""

    path: Path | None
    note: str = ""


def _edited_in_place(ws, phase: str) -> bool | None:
    """Whether the snapshot differs from what the compiler wrote; None when no hash was recorded."""
    rec = ws.manifest.phases.get(phase)
    if rec is None or not rec.sha256:
        return None
    return file_sha256(ws.snapshot_path(phase)) != rec.sha256


def _newer_than_build(ws, phase: str) -> bool:
    """A workspace without hashes: the compiler writes every snapshot before the vmfb, so a newer
    snapshot was changed since (the same test resume_plan makes)."""
    vmfb = ws.vmfb_path
    if vmfb is None or not vmfb.is_file():
        return False
    return ws.snapshot_path(phase).stat().st_mtime_ns > vmfb.stat().st_mtime_ns


def compiler_text(ws, phase: str, scratch: Path) -> CompilerText:
    """The compiler's output of `phase`: its snapshot when unchanged, else made again under `scratch`
    (a folder inside the workspace the caller removes) and checked against the recorded hash."""
    snap = ws.snapshot_path(phase)
    edited = _edited_in_place(ws, phase)
    if edited is None:
        if _newer_than_build(ws, phase):
            return CompilerText(None, f"{snap.name} changed after the last build and the workspace recorded no "
                                      "hash of the compiler's text: no compiler's original kept")
        return CompilerText(snap)
    if not edited:
        return CompilerText(snap)
    return regenerate(ws, phase, scratch)


def _inputs(ws, phase: str) -> list[str]:
    """Phases whose snapshot to compile `phase` from: the input of the compile that wrote it (the
    one the recorded hash is for), then the phase before it."""
    compiled_from = ws.manifest.phases[phase].compiled_from
    candidates = []
    if compiled_from in PHASES and phase_index(compiled_from) < phase_index(phase):
        candidates.append(compiled_from)
    candidates.append(PHASES[phase_index(phase) - 1])
    usable = []
    for start in dict.fromkeys(candidates):
        rec = ws.manifest.phases.get(start)
        # an edit the workspace recorded was that compile's input; an unrecorded change was not
        if start == "start" or (rec is not None and (rec.state == EDITED or
                                                     (rec.state == DONE and not _edited_in_place(ws, start)))):
            usable.append(start)
    return usable


def regenerate(ws, phase: str, scratch: Path) -> CompilerText:
    """Compile `phase` again (iree-compile --compile-from=<input> --compile-to=<phase>) and keep the text
    only if it hashes to what the compiler wrote the first time."""
    recorded = ws.manifest.phases[phase].sha256
    snap = ws.snapshot_path(phase)
    tried = []
    for start in _inputs(ws, phase):
        out = scratch / f"again-from-{start}"
        try:
            job = CompileJob(ws.snapshot_path(start), out, ws.compile_options(from_phase=start, to_phase=phase))
            made = job.run().phases[-1].path
        except StudioError as exc:
            tried.append(f"from {start}: {exc.reason}")
            continue
        if file_sha256(made) == recorded:
            return CompilerText(made)
        tried.append(f"from {start}: a different text")
    detail = "; ".join(tried) or "no unchanged earlier snapshot to compile from"
    return CompilerText(None, f"{snap.name} was edited in place and compiling {phase} again did not give back "
                              f"the compiler's text ({detail}): no compiler's original kept")
