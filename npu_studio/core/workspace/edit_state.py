"""Honest edit state of a workspace's phases: edited means "differs from what the compiler wrote".

Files this module keeps in the workspace (next to the Workspace's own):

    originals/NN.<phase>.mlir   the compiler's output of a phase the user edited (kept on first edit,
                                dropped when the compiler writes that phase again)
    builds/previous/NN.<phase>.mlir  the snapshots a resume replaced (hard links: free),
                                so a phase can be diffed before and after a resume
    edits/drafts/NN.<phase>.mlir     unsaved editor text, autosaved as typed (atomic writes)

The policies are plain functions over a Workspace, used by the app and the CLI alike.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..compile.compiler import CompileResult, snapshot_name
from ..compile.phases import SNAPSHOT_PHASES, phase_index, phases_after
from ..errors import StudioError
from ..textio import read_text, write_bytes_atomic
from . import compiler_output
from .confine import copy_inside, folder_inside, inside, remove_inside, replace_inside, write_text_inside
from .manifest import DONE, EDITED, STALE
from .publish_journal import new_staging
from .workspace import Workspace

PREVIOUS_BUILD = "builds/previous"
log = logging.getLogger(__name__)


def original_path(ws: Workspace, phase: str) -> Path:
    return ws.root / "originals" / snapshot_name(phase)


def previous_build_path(ws: Workspace, phase: str) -> Path:
    return ws.root / PREVIOUS_BUILD / snapshot_name(phase)


def compiler_text_path(ws: Workspace, phase: str) -> Path:
    """Where the compiler's own output of `phase` is: the kept original, or the snapshot if never edited."""
    kept = original_path(ws, phase)
    return kept if kept.is_file() else ws.snapshot_path(phase)


def _read(path: Path) -> str:
    return read_text(path)  # BadFile (a StudioError) naming the file: missing, a folder, not UTF-8


def is_edited(ws: Workspace, phase: str, text: str | None = None) -> bool:
    """Whether `text` (default: the phase's snapshot) differs from the compiler's output of the phase."""
    if text is None:
        if not original_path(ws, phase).is_file():
            return False
        text = _read(ws.snapshot_path(phase))
    return text != _read(compiler_text_path(ws, phase))


def _link_or_copy(root: Path, src: Path, dest: Path) -> None:
    """`src` at `dest` in the workspace `root` (no link on the way to `dest` nor at it: confine.py)."""
    remove_inside(root, dest)
    folder_inside(root, dest.parent)
    try:
        os.link(src, dest)  # the snapshot is replaced with os.replace later, so the link keeps this content
    except OSError:
        copy_inside(root, src, dest)


def check_resume_writes(ws: Workspace, phase: str) -> None:
    """Refuse (WorkspaceError, one line naming the link) a resume whose writes would go through a link:
    the folders of originals, the previous build and drafts, checked before anything is written."""
    for path in (original_path(ws, phase), previous_build_path(ws, phase), ws.draft_path(phase),
                 ws.snapshot_path(phase)):
        inside(ws.root, path, leaf_link_ok=path == ws.snapshot_path(phase))


# -- resuming ------------------------------------------------------------------


@dataclass(frozen=True)
class ResumePlan:
    needed: bool
    reason: str  # one line for the log


def resume_plan(ws: Workspace, phase: str, text: str) -> ResumePlan:
    """Whether resuming `phase` with `text` would change anything.

    Nothing to do when the text is the snapshot the later phases were built from
    and every later phase and the vmfb are there and current.
    """
    if phase not in SNAPSHOT_PHASES:
        raise StudioError(ws.root, f"cannot resume from phase {phase!r}")
    snap = ws.snapshot_path(phase)
    if not snap.is_file():
        raise StudioError(snap, f"no snapshot for phase {phase}; compile first")
    if text != _read(snap):
        return ResumePlan(True, f"{phase} was edited")
    vmfb = ws.vmfb_path
    if vmfb is None or not vmfb.is_file():
        return ResumePlan(True, "no module.vmfb")
    # The compiler writes every snapshot before the vmfb: a newer snapshot was edited in place.
    if snap.stat().st_mtime_ns > vmfb.stat().st_mtime_ns:
        return ResumePlan(True, f"{snap.name} changed after the last build")
    for later in phases_after(phase):
        rec = ws.manifest.phases.get(later)
        if rec is None or rec.state != DONE or not (ws.root / rec.file).is_file():
            return ResumePlan(True, f"{later} is not up to date")
    return ResumePlan(False, f"{phase} is unchanged and every later phase is up to date: nothing recompiled")


def _needs_original(ws: Workspace, phase: str) -> bool:
    """No original kept yet and the snapshot is the compiler's (not a recorded edit)."""
    rec = ws.manifest.phases.get(phase)
    return (not original_path(ws, phase).is_file() and ws.snapshot_path(phase).is_file()
            and not (rec is not None and rec.state == EDITED))


def _keep_compiler_text(ws: Workspace, phase: str, dest: Path, notes: list[str] | None) -> None:
    """Link the compiler's text of `phase` to `dest`: the snapshot, or, when it was edited in place,
    the compiler's text made again (compiler_output.py); none and a note when that cannot be had."""
    scratch = new_staging(ws.root)
    try:
        found = compiler_output.compiler_text(ws, phase, scratch)
        if found.path is not None:
            _link_or_copy(ws.root, found.path, dest)
        if found.note:
            log.warning("%s", found.note)
            if notes is not None:
                notes.append(found.note)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def keep_original(ws: Workspace, phase: str, notes: list[str] | None = None) -> None:
    """Keep the compiler's output of `phase` before an edit replaces its snapshot (once: later edits
    replace an edit, not the compiler's output)."""
    if _needs_original(ws, phase):
        _keep_compiler_text(ws, phase, original_path(ws, phase), notes)


def record_edit(ws: Workspace, phase: str, text: str) -> None:
    """Make `text` the phase's snapshot, keeping the compiler's output first; edited only if it differs."""
    snap = ws.snapshot_path(phase)
    kept = original_path(ws, phase)
    keep_original(ws, phase)
    if text == _read(kept if kept.is_file() else snap):
        revert(ws, phase)
        return
    ws.record_edit(phase, text)


def finish(ws: Workspace, result: CompileResult) -> None:
    """Record a successful compile; phases the compiler wrote again have no edits any more."""
    ws.finish(result)
    for t in result.phases:
        remove_inside(ws.root, original_path(ws, t.phase))
    if result.from_phase != "start" and phase_index(result.from_phase) > 0:
        rec = ws.manifest.phases.get(result.from_phase)
        if rec is not None:
            rec.state = EDITED if is_edited(ws, result.from_phase) else DONE
            ws.save()


def revert(ws: Workspace, phase: str) -> bool:
    """Put the compiler's output of `phase` back and drop its draft. True if the snapshot changed.

    Later phases built from the edit go stale (a resume rebuilds them).
    """
    ws.discard_draft(phase)
    kept = original_path(ws, phase)
    rec = ws.manifest.phases.get(phase)
    if not kept.is_file():
        if rec is not None and rec.state == EDITED:
            rec.state = DONE
            ws.save()
        return False
    snap = ws.snapshot_path(phase)
    changed = _read(kept) != _read(snap)
    write_bytes_atomic(inside(ws.root, snap, leaf_link_ok=True), kept.read_bytes())
    remove_inside(ws.root, kept)
    if rec is not None:
        rec.state, rec.size_bytes = DONE, snap.stat().st_size
    if changed:
        for later in phases_after(phase):
            if later in ws.manifest.phases:
                ws.manifest.phases[later].state = STALE
    ws.save()
    return changed


# -- drafts: unsaved editor text --------------------------------------------------


def is_unchanged(ws: Workspace, phase: str, text: str) -> bool:
    """Whether `text` is the phase's snapshot as it is on disk (then it is no edit)."""
    try:
        return text == ws.snapshot_path(phase).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def autosave_draft(ws: Workspace, phase: str, text: str) -> bool:
    """Keep unsaved editor text (atomic, fsynced: a crash leaves the old or the new draft, never half).

    Text equal to the phase's snapshot is no edit: its draft is dropped. Returns whether a draft is kept.
    """
    if is_unchanged(ws, phase, text):
        ws.discard_draft(phase)
        return False
    write_text_inside(ws.root, Path("edits", "drafts", snapshot_name(phase)), text)
    return True


def phase_states(ws: Workspace) -> dict[str, str]:
    """State of every snapshot phase: a draft or a differing snapshot is edited; the rest as recorded."""
    drafts = {p for p in SNAPSHOT_PHASES if (ws.root / "edits" / "drafts" / snapshot_name(p)).is_file()}
    states = {}
    for phase in SNAPSHOT_PHASES:
        rec = ws.manifest.phases.get(phase)
        if rec is None:
            states[phase] = "pending"
        elif phase in drafts or (rec.state == EDITED and is_edited(ws, phase)):
            states[phase] = EDITED
        elif rec.state == EDITED:
            states[phase] = DONE
        else:
            states[phase] = rec.state
    return states


def set_aside(ws: Workspace, phase: str, notes: list[str] | None = None) -> Path:
    """Link aside what a resume from `phase` replaces (the later snapshots; the compiler's original of
    the phase if none is kept yet: made again if the snapshot was edited in place, see keep_original).
    Call put_in_place after the resume succeeded, then remove the folder. Why no original could be
    kept goes to `notes` (and the log)."""
    aside = new_staging(ws.root)  # a dead process's is removed like any leftover staging folder
    for later in phases_after(phase):
        if ws.snapshot_path(later).is_file():
            _link_or_copy(ws.root, ws.snapshot_path(later), aside / "previous" / snapshot_name(later))
    if _needs_original(ws, phase):
        _keep_compiler_text(ws, phase, aside / "original", notes)
    return aside


def put_in_place(ws: Workspace, phase: str, aside: Path) -> None:
    """After a successful resume: the set-aside snapshots become the previous build, the original kept."""
    remove_inside(ws.root, PREVIOUS_BUILD)
    folder_inside(ws.root, Path(PREVIOUS_BUILD).parent)
    (aside / "previous").mkdir(exist_ok=True)
    replace_inside(ws.root, aside / "previous", PREVIOUS_BUILD)
    if (aside / "original").is_file():
        original = original_path(ws, phase)
        folder_inside(ws.root, original.parent)
        replace_inside(ws.root, aside / "original", original)


def resume(ws: Workspace, phase: str, text: str, *, on_progress=None,
           display_path: Path | None = None) -> CompileResult | None:
    """Resume from `phase` with `text`; None (and nothing compiled) when the plan says nothing changed.

    The compile is a workspace transaction: `text` becomes the phase's snapshot only when it
    succeeds. What it replaces (the compiler's original of the phase, the previous build's
    snapshots) is linked aside first and put in place only then, so a failed resume leaves the
    workspace as it was. Errors name `display_path` (default: the draft the text is kept in).
    Why no compiler's original could be kept is in the result's `extra["notes"]`.
    """
    check_resume_writes(ws, phase)
    if not resume_plan(ws, phase, text).needed:
        ws.discard_draft(phase)
        return None
    notes: list[str] = []
    aside = set_aside(ws, phase, notes)
    try:
        result = ws.resume_job(phase, text, on_progress=on_progress, display_path=display_path).run()
        put_in_place(ws, phase, aside)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    finish(ws, result)
    if notes:
        result.extra["notes"] = notes
    return result
