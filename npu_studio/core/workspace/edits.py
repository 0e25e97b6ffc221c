"""An edited snapshot published into a workspace: as the phase's snapshot and as a new `edits/` record.

Used by a resume (the workspace job publishes the edit with the build) and by
`Workspace.record_edit` (an edit kept without compiling).
"""

from __future__ import annotations

import time
from pathlib import Path

from ..compile.compiler import snapshot_name
from ..errors import StudioError
from ..textio import read_bytes
from .confine import remove_inside
from .manifest import EDITED, Manifest, PhaseRecord
from .publish_journal import Publish
from .transaction import Transaction


def stage_edit(root: Path, publish: Publish, manifest: Manifest, phase: str, text: str) -> Path:
    """Stage `text` as the phase's snapshot and as a new edits/ record; returns the record's path."""
    n = sum(1 for e in manifest.edits if e.get("phase") == phase) + 1
    name = snapshot_name(phase)[:-5]
    while (root / "edits" / f"{name}.{n}.mlir").exists():  # never replace an earlier record
        n += 1
    record = f"edits/{name}.{n}.mlir"
    snap = f"phases/{snapshot_name(phase)}"
    for staged in (record, snap):
        path = publish.staging / "edit" / staged
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        publish.move(path, staged)
    rec = manifest.phases.setdefault(phase, PhaseRecord(file=snap))
    rec.file, rec.state, rec.size_bytes = snap, EDITED, len(text.encode())
    manifest.edits.append({"phase": phase, "file": record, "time": time.time()})
    return root / record


def publish_edit(ws, txn: Transaction, manifest: Manifest, phase: str, text: str | None) -> None:
    """Commit `txn` with `manifest`; a draft equal to the published edit has become an edit and goes."""
    txn.commit(manifest.to_json())
    ws.manifest = manifest
    if text is not None:
        draft = ws.draft_path(phase)
        try:  # a draft through a link, or no regular file, is left as it is
            if read_bytes(draft) == text.encode("utf-8"):
                remove_inside(ws.root, draft)
        except (OSError, StudioError):
            pass
