"""npu-studio resume SNAPSHOT [--from PHASE] [--workspace DIR]"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.errors import StudioError
from ..core.textio import check_regular_file, read_text
from ..core.workspace import edit_state
from ..core.workspace.workspace import Workspace
from .common import progress_printer
from .compile import phase_rows, print_phase_table


def add_parser(sub) -> None:
    p = sub.add_parser("resume", help="compile again from an (edited) phase snapshot",
                       description="Compile SNAPSHOT with --compile-from=PHASE and regenerate every later "
                                   "snapshot and the vmfb; earlier snapshots stay as they are.")
    p.add_argument("snapshot", type=Path, help="the (possibly edited) snapshot file")
    p.add_argument("--from", dest="phase", choices=SNAPSHOT_PHASES,
                   help="phase SNAPSHOT is the output of (default: what the workspace recorded for it)")
    p.add_argument("--workspace", type=Path,
                   help="workspace to update (default: the one SNAPSHOT lives in)")
    p.set_defaults(func=run)


def find_workspace(snapshot: Path, explicit: Path | None) -> Workspace:
    if explicit is not None:
        return Workspace.open(explicit)
    for parent in snapshot.resolve().parents:
        if Workspace.is_workspace(parent):
            return Workspace.open(parent)
    raise StudioError(snapshot, "not inside a workspace; pass --workspace")


def run(args) -> int:
    snapshot: Path = args.snapshot
    check_regular_file(snapshot)  # missing, a folder, a FIFO or a device: one line saying which
    ws = find_workspace(snapshot, args.workspace)
    recorded = ws.phase_of(snapshot)
    phase = args.phase or recorded
    if phase is None:
        raise StudioError(snapshot, "the workspace does not know this file's phase; pass --from PHASE")
    if recorded is not None and args.phase is not None and recorded != args.phase:
        raise StudioError(snapshot, f"the workspace recorded this file as phase {recorded}, not {args.phase}")
    text = read_text(snapshot)  # BadFile names the file and the byte offset of a non-UTF-8 byte
    # A failure keeps the previous build and the snapshot as they were; errors name SNAPSHOT.
    result = edit_state.resume(ws, phase, text, on_progress=progress_printer(sys.stderr.isatty()),
                               display_path=snapshot)
    if result is None:
        print(edit_state.resume_plan(ws, phase, text).reason, file=sys.stderr)
    else:
        for note in result.extra.get("notes", ()):
            print(f"note: {note}", file=sys.stderr)
        print(f"Resumed from {phase}", file=sys.stderr)
    print_phase_table(ws, phase_rows(ws))
    return 0
