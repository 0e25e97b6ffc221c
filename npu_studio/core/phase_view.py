"""What the IR pane shows for a phase: which text (draft, snapshot or NPU program) and its state line.

The decision lives here, without Qt, so that it is tested without a window: an uncompiled draft
is shown (editable) in place of the snapshot; a phase whose compile failed shows the previous
build's text and says so; the `npu` phase shows the NPU program in the `npu` dialect, or why
there is none yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .npu.report.coverage import coverage
from .npu.store import workspace_io
from .textio import read_text
from .workspace.workspace import Workspace

DRAFT_STATE = "edited, not compiled: autosaved draft"
FAILED_STATE = "failed: the text below is from the previous build"


@dataclass(frozen=True)
class PhaseView:
    phase: str
    text: str
    label: str  # one line of rich text: the phase, its file and its state
    path: Path | None  # the file shown (the label's tooltip); None: nothing on disk yet
    is_draft: bool  # the text is an uncompiled edit: it shows in the phase's editable document


def snapshot_view(ws: Workspace, phase: str, draft: str | None, state: str) -> PhaseView:
    """A snapshot phase: its draft if there is one, else its snapshot (StudioError naming the
    file when it is missing, unreadable or not UTF-8)."""
    path = ws.snapshot_path(phase)
    text = draft if draft is not None else read_text(path)
    return PhaseView(phase, text, snapshot_label(ws, phase, draft is not None, state), path,
                     is_draft=draft is not None)


def snapshot_label(ws: Workspace, phase: str, has_draft: bool, state: str) -> str:
    """The state line of a snapshot phase, without reading its text (it follows the phase's state)."""
    if has_draft:
        state = DRAFT_STATE
    elif state == "failed":  # the compile did not write it: what shows is the build before
        state = FAILED_STATE
    return f"<b>{phase}</b> — {ws.snapshot_path(phase).relative_to(ws.root)} ({state})"


def npu_view(ws: Workspace | None, phase: str, result, state: str, target_label: str) -> PhaseView:
    """The NPU program (`result`: the session's NpuResult or None), read-only."""
    if result is None:
        return PhaseView(phase, f"// NPU pipeline: {state}\n", f"<b>{phase}</b> — {state} ({target_label})",
                         None, is_draft=False)
    text = result.mlir
    if ws is None:
        return PhaseView(phase, text, f"<b>{phase}</b> — {state} ({target_label})", None, is_draft=False)
    path = workspace_io.mlir_path(ws)
    label = (f"<b>{phase}</b> — {path} ({state}; {target_label}, target {result.program.target.name}) — "
             f"{coverage(result.program).summary()}")
    return PhaseView(phase, text, label, path, is_draft=False)
