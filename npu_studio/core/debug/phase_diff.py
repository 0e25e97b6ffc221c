"""Which two texts of a workspace to diff: two phases, an edit against the compiler, two builds, one dispatch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..compile.phases import PHASES, SNAPSHOT_PHASES
from ..errors import StudioError
from ..ir.diff import DiffOptions, TextDiff, diff_texts
from ..textio import read_text
from ..workspace import edit_state
from ..workspace.workspace import Workspace


@dataclass(frozen=True)
class DiffSide:
    label: str  # shown in the diff header: "flow (compiler output)"
    path: Path


def _snapshot(ws: Workspace, phase: str) -> Path:
    if phase not in SNAPSHOT_PHASES and phase != "start":
        raise StudioError(None, f"unknown phase {phase!r}; expected one of: {', '.join(SNAPSHOT_PHASES)}")
    path = ws.snapshot_path(phase)
    if not path.is_file():
        raise StudioError(ws.root, f"no {phase} snapshot; compile first")
    return path


def sides(ws: Workspace, phase_a: str, phase_b: str | None = None, *,
          original: bool = False, previous_build: bool = False) -> tuple[DiffSide, DiffSide]:
    """The two texts to compare.

    - PHASE_A PHASE_B: the two phases' snapshots.
    - PHASE_A --original: the compiler's output of the phase against its current (edited) text.
    - PHASE_A --previous-build: the phase before the last resume against now.
    - PHASE_A alone: what the phase changed: the phase before it against it.
    """
    if phase_b is not None:
        return DiffSide(phase_a, _snapshot(ws, phase_a)), DiffSide(phase_b, _snapshot(ws, phase_b))
    current = DiffSide(f"{phase_a} (current)", _snapshot(ws, phase_a))
    if original:
        return DiffSide(f"{phase_a} (compiler output)", edit_state.compiler_text_path(ws, phase_a)), current
    if previous_build:
        path = edit_state.previous_build_path(ws, phase_a)
        if not path.is_file():
            raise StudioError(ws.root, f"no earlier build of {phase_a} is kept (only a resume keeps one)")
        return DiffSide(f"{phase_a} (before the last resume)", path), current
    before = PHASES[PHASES.index(phase_a) - 1]
    return DiffSide(before, _snapshot(ws, before)), DiffSide(phase_a, current.path)


def dispatch_text(path: Path, phase: str, dispatch: int) -> str:
    """The text of dispatch #`dispatch`'s executable in a snapshot, as the dispatch table numbers it."""
    from ..ir.dispatch_index import index_file

    index = index_file(path, phase)
    for rec in index.dispatches:
        if rec.index == dispatch:
            if rec.text_range is None:
                raise StudioError(path, f"dispatch #{dispatch} has no executable in the {phase} snapshot")
            return rec.text_range.slice(read_text(path))
    raise StudioError(path, f"no dispatch #{dispatch} in the {phase} snapshot "
                            f"({len(index.dispatches)} dispatches)")


def diff_sides(a: DiffSide, b: DiffSide, *, dispatch: int | None = None, phases: tuple[str, str] | None = None,
               options: DiffOptions = DiffOptions()) -> TextDiff:
    if dispatch is None:
        return diff_texts(read_text(a.path), read_text(b.path), a.label, b.label, options)
    pa, pb = phases or (a.label.split()[0], b.label.split()[0])
    return diff_texts(dispatch_text(a.path, pa, dispatch), dispatch_text(b.path, pb, dispatch),
                      f"{a.label} dispatch #{dispatch}", f"{b.label} dispatch #{dispatch}", options)


def workspace_diff(ws: Workspace, phase_a: str, phase_b: str | None = None, *, original: bool = False,
                   previous_build: bool = False, dispatch: int | None = None,
                   options: DiffOptions = DiffOptions()) -> TextDiff:
    a, b = sides(ws, phase_a, phase_b, original=original, previous_build=previous_build)
    if phase_b is not None:
        phases = (phase_a, phase_b)
    elif original or previous_build:
        phases = (phase_a, phase_a)
    else:
        phases = (PHASES[PHASES.index(phase_a) - 1], phase_a)
    return diff_sides(a, b, dispatch=dispatch, phases=phases, options=options)
