"""Executable substitutions: edited executables swapped into the build by IREE itself.

A substitution replaces one `hal.executable` with a file the user edited:
its source (`--iree-hal-substitute-executable-source=NAME=FILE`) or its
configured form with other tile sizes (`...-configuration=NAME=FILE`).
Every substitution is kept in the workspace and listed in the manifest:

    substitutions/NAME.KIND.N.mlir        each text that built, N = 1, 2, ...
    substitutions/drafts/NAME.KIND.mlir   the text as last typed, until it builds
    substitutions/plain/module.vmfb       the build without substitutions (numeric gate)

All switched-on substitutions are passed to every later compile and resume
(Workspace.substitution_flags). Before a build the text is parsed and its
executable name checked, so a typo is reported at its line and column
without running the compiler; a build that fails anyway keeps the text as a
draft and the previous build in place (the workspace job publishes only on success).

A rebuild starts from the latest phase snapshot at which the substitution
still takes effect (REBUILD_FROM), not from the imported model.
"""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from ..compile.compiler import EXECUTABLES_DIR, CompileJob, CompileResult, ProgressCallback
from ..errors import Cancelled, CompileFailed, StudioError
from ..workspace.confine import copy_inside, copy_tree_inside, folder_inside, remove_inside, write_text_inside
from ..workspace.substitutions import (CONFIGURATION, FOLDER, KINDS, SOURCE, Substitution, active_flags,
                                       compiler_copy, find, load, store, update, write_compiler_copy)

# IREE swaps sources in at the end of the executable-sources phase and
# configurations at the end of executable-configurations, so those phases'
# snapshots already hold the swapped executable and compiling from them
# ignores the flag. The phase before is the latest that still applies it
# (tests/core/test_substitution.py shows both sides).
REBUILD_FROM = {SOURCE: "stream", CONFIGURATION: "executable-sources"}
PLAIN = "plain"
_APPLIED_NOTE = "substituted with MLIR source at"


class SubstitutionError(StudioError):
    """A substitution was rejected or its build failed; `log` holds the compiler's stderr."""

    def __init__(self, path, reason, *, line=None, col=None, log: str = ""):
        super().__init__(path, reason, line=line, col=col)
        self.log = log


# -- checking a text before any build ---------------------------------------


def check_text(text: str, name: str, kind: str, path: Path) -> None:
    """Parse `text` with the MLIR parser and check it defines `hal.executable @name`.

    Raises SubstitutionError at the offending line and column.
    """
    from .catalog import executable_names
    from ..ir.mlir_text import SnapshotParseError, blank_locations, parse_module

    if kind not in KINDS:
        raise SubstitutionError(path, f"unknown substitution kind {kind!r}; expected source or configuration")
    # Without its locs first, so a verifier error has a line and column;
    # then as typed, which also checks the locs themselves.
    for variant in (blank_locations(text, drop_resources=False), text):
        try:
            parse_module(variant, path)
        except SnapshotParseError as e:
            raise SubstitutionError(path, e.message, line=e.line or None, col=e.col or None) from None
    names = executable_names(text)
    if not names:
        raise SubstitutionError(path, f"defines no hal.executable; expected @{name}", line=1, col=1)
    if name not in [n for n, _, _ in names]:
        other, line, col = names[0]
        raise SubstitutionError(path, f"defines hal.executable @{other}, not @{name}", line=line, col=col)


def known_names(ws) -> set[str]:
    from .catalog import _by_symbol

    return set(_by_symbol(ws.root / EXECUTABLES_DIR / "sources"))


def draft_path(ws, name: str, kind: str) -> Path:
    return ws.root / FOLDER / "drafts" / f"{name}.{kind}.mlir"


def keep_draft(ws, name: str, kind: str, text: str) -> Path:
    """Keep an edit that has not been substituted yet (the editor calls this when it lets go of it)."""
    return write_text_inside(ws.root, draft_path(ws, name, kind), text)


def current_text(ws, name: str, kind: str) -> str:
    """What the editor shows: the unbuilt draft, else the substituted text, else IREE's dump."""
    sub = find(ws, name, kind)
    draft = draft_path(ws, name, kind)
    for path in (draft, ws.root / sub.file if sub and sub.file else None):
        if path is not None and path.is_file():
            return path.read_text()
    from .catalog import find_executable

    info = find_executable(ws, name)
    path = info.source if kind == SOURCE else info.configuration
    if path is None:
        raise StudioError(ws.root, f"IREE dumped no {kind} for @{name}")
    return path.read_text()


# -- rebuilding -----------------------------------------------------------------


class Rebuild:
    """One substitute/switch/remove and its compile. `run()` blocks; `cancel()` from any thread."""

    def __init__(self, ws, subs: list[Substitution], kind: str, *, candidate: Substitution | None = None,
                 on_progress: ProgressCallback | None = None):
        self.ws = ws
        self.subs = subs  # the records as they will be after a successful build
        self.candidate = candidate
        phase = REBUILD_FROM[kind]
        rec = ws.manifest.phases.get(phase)
        snap = ws.snapshot_path(phase)
        if rec is None or not snap.is_file():
            raise StudioError(ws.root, f"no {phase} snapshot to rebuild from; compile first")
        if rec.state == "stale":
            raise StudioError(snap, f"the {phase} snapshot is out of date after an edit; resume first")
        from ..workspace.job import WorkspaceJob

        options = ws.compile_options(from_phase=phase, extra_flags=tuple(active_flags(ws, subs)))
        self.job = WorkspaceJob(ws, options, on_progress=on_progress)

    def cancel(self) -> None:
        self.job.cancel()

    def run(self, before_publish: Callable[[CompileResult], None] | None = None) -> CompileResult:
        """Build and publish; `before_publish(staged result)` runs first, under the lock (the
        numeric check: the substitution is published only together with its verdict)."""
        self.job.before_publish = before_publish
        keep_plain_build(self.ws)
        if self.candidate is not None:
            self.candidate.draft = self.candidate.error = None
        # Published with the build in one commit; a failed job reloads the manifest from disk.
        self.ws.manifest.substitutions = [asdict(s) for s in self.subs]
        try:
            result = self.job.run()
        except CompileFailed as exc:
            if self.candidate is None:
                raise
            self._failed(exc)
        except Cancelled:
            if self.candidate is not None:  # never built: only its draft stays, with the text
                remove_inside(self.ws.root, self.candidate.file)
                remove_inside(self.ws.root, compiler_copy(self.ws, self.candidate.file))
            raise
        if self.candidate is not None:
            if not _was_applied(result.stderr, self.candidate.name):
                self._failed(None, result.stderr)
            remove_inside(self.ws.root, draft_path(self.ws, self.candidate.name, self.candidate.kind))
        return result

    def _failed(self, exc: CompileFailed | None, log: str = ""):
        """Record why the candidate did not build; the draft keeps its text."""
        cand = self.candidate
        built = self.ws.root / cand.file
        draft = draft_path(self.ws, cand.name, cand.kind)
        if exc is not None:
            reason, line, col = _error_in(exc.log, compiler_copy(self.ws, cand.file))
            log = exc.log
            remove_inside(self.ws.root, built)
            remove_inside(self.ws.root, compiler_copy(self.ws, cand.file))
            record = find(self.ws, cand.name, cand.kind) or Substitution(cand.name, cand.kind, enabled=False)
        else:  # built, but IREE matched no executable: keep the file, switch the record off
            reason, line, col = f"iree-compile did not substitute @{cand.name}", None, None
            record = find(self.ws, cand.name, cand.kind) or cand
            record.enabled = False
        record.draft = str(draft.relative_to(self.ws.root))
        record.error = f"{line}:{col}: {reason}" if line else reason
        update(self.ws, record)
        raise SubstitutionError(draft, reason, line=line, col=col, log=log)


def check(ws, name: str, kind: str, text: str) -> None:
    """Keep `text` as a draft, then parse it and check its executable name.

    A rejected text is recorded with its error (line:col) in the manifest.
    """
    if name not in known_names(ws):
        raise SubstitutionError(ws.root, f"no executable @{name} in this build (see `npu-studio executables`)")
    draft = keep_draft(ws, name, kind, text)
    try:
        check_text(text, name, kind, draft)
    except SubstitutionError as exc:
        record = find(ws, name, kind) or Substitution(name, kind, enabled=False)
        record.draft = str(draft.relative_to(ws.root))
        record.error = f"{exc.line}:{exc.col}: {exc.reason}" if exc.line else exc.reason
        update(ws, record)
        raise


def substitute(ws, name: str, kind: str, text: str, *, on_progress: ProgressCallback | None = None) -> Rebuild:
    """Check `text` (see `check`) and prepare the rebuild that substitutes it for executable @name.

    The text is saved as a draft first, so it is kept whatever happens next.
    """
    check(ws, name, kind, text)
    version = 1 + sum(1 for _ in (ws.root / FOLDER).glob(f"{glob.escape(name)}.{kind}.*.mlir"))
    built = ws.root / FOLDER / f"{name}.{kind}.{version}.mlir"
    write_text_inside(ws.root, built, text)
    write_compiler_copy(ws, str(built.relative_to(ws.root)), text)
    cand = Substitution(name, kind, file=str(built.relative_to(ws.root)))
    subs = [s for s in load(ws) if (s.name, s.kind) != (name, kind)] + [cand]
    return Rebuild(ws, subs, kind, candidate=cand, on_progress=on_progress)


def set_enabled(ws, name: str, kind: str, enabled: bool, *, on_progress=None) -> Rebuild:
    subs = load(ws)
    target = next((s for s in subs if (s.name, s.kind) == (name, kind) and s.file), None)
    if target is None:
        raise StudioError(ws.root, f"no {kind} substitution of @{name} that has built")
    target.enabled, target.verdict = enabled, None
    return Rebuild(ws, subs, kind, on_progress=on_progress)


def remove(ws, name: str, kind: str | None = None, *, on_progress=None) -> Rebuild | None:
    """Drop the substitution(s) of @name from the manifest (their files stay); a rebuild if one was applied."""
    subs = load(ws)
    gone = [s for s in subs if s.name == name and (kind is None or s.kind == kind)]
    if not gone:
        raise StudioError(ws.root, f"no substitution of @{name}")
    kept = [s for s in subs if s not in gone]
    if not any(s.applied for s in gone):
        store(ws, kept)
        return None
    # A source substitution lives in the executable-sources snapshot: rebuild from before it.
    kinds = {s.kind for s in gone if s.applied}
    return Rebuild(ws, kept, SOURCE if SOURCE in kinds else CONFIGURATION, on_progress=on_progress)


def _error_in(stderr: str, path: Path) -> tuple[str, int | None, int | None]:
    """The compiler's first error inside the substituted file, with its line and column."""
    located = re.compile(re.escape(str(path)) + r":(\d+):(\d+): error: (.*)")
    for line in stderr.splitlines():
        m = located.search(line)
        if m:
            return m.group(3).strip(), int(m.group(1)), int(m.group(2))
    errors = [ln.strip() for ln in stderr.splitlines() if "error:" in ln]
    return (errors[0] if errors else "iree-compile failed"), None, None


def set_staged_verdict(ws, name: str, kind: str, verdict: dict) -> None:
    """The verdict of the substitution about to be published (in ws.manifest, not saved: the
    rebuild's publish writes it with the build)."""
    for record in ws.manifest.substitutions:
        if record.get("name") == name and record.get("kind") == kind:
            record["verdict"] = verdict


def was_applied(stderr: str, name: str) -> bool:
    return _was_applied(stderr, name)


def _was_applied(stderr: str, name: str) -> bool:
    return any(_APPLIED_NOTE in ln and f"`{name}`" in ln for ln in stderr.splitlines())


# -- the plain build the numeric gate compares against -----------------------------


def _stream_digest(ws) -> str:
    return hashlib.sha256(ws.snapshot_path("stream").read_bytes()).hexdigest()


def plain_folder(ws) -> Path:
    return ws.root / FOLDER / PLAIN


def _current_build_is_plain(ws) -> bool:
    cmd = ws.manifest.command
    return bool(cmd) and not any(a.startswith("--iree-hal-substitute-executable") for a in cmd)


def _plain_is_current(ws) -> bool:
    rec = ws.manifest.plain_build
    return (rec is not None and (plain_folder(ws) / "module.vmfb").is_file()
            and rec.get("stream_sha256") == _stream_digest(ws))


def keep_plain_build(ws) -> None:
    """Copy the current build aside as the plain one, if it has no substitutions and none is kept."""
    if _plain_is_current(ws) or not _current_build_is_plain(ws) or ws.vmfb_path is None:
        return
    folder = plain_folder(ws)
    remove_inside(ws.root, folder)  # a link at or above it is refused (confine.py): nothing outside is touched
    copy_inside(ws.root, ws.vmfb_path, folder / "module.vmfb")
    bench = ws.root / EXECUTABLES_DIR / "benchmarks"
    if bench.is_dir():
        copy_tree_inside(ws.root, bench, folder / EXECUTABLES_DIR / "benchmarks")
    ws.manifest.plain_build = {"vmfb": str((folder / "module.vmfb").relative_to(ws.root)),
                               "stream_sha256": _stream_digest(ws)}
    ws.save()


def plain_build(ws, *, on_progress: ProgressCallback | None = None,
                started: Callable[[CompileJob], None] | None = None) -> Path:
    """Folder of the build without substitutions (module.vmfb, executables/benchmarks).

    Compiled from the stream snapshot without substitution flags when the
    kept one is missing or older than the stream snapshot.
    """
    keep_plain_build(ws)
    if _plain_is_current(ws):
        return plain_folder(ws)
    folder = plain_folder(ws)
    remove_inside(ws.root, folder)
    folder_inside(ws.root, folder)
    job = CompileJob(ws.snapshot_path("stream"), folder, ws.compile_options(from_phase="stream", extra_flags=()),
                     on_progress=on_progress)
    if started is not None:
        started(job)
    job.run()
    for scratch in ("phases", "dumps", "stderr.log"):  # the workspace has its own snapshots
        remove_inside(ws.root, folder / scratch)
    ws.manifest.plain_build = {"vmfb": str((folder / "module.vmfb").relative_to(ws.root)),
                               "stream_sha256": _stream_digest(ws)}
    ws.save()
    return folder


def record_verdict(ws, name: str, kind: str, verdict: dict) -> None:
    sub = find(ws, name, kind)
    if sub is not None:
        sub.verdict = verdict
        update(ws, sub)


