"""What opening a model file means when it already has a workspace.

- No workspace yet (or one that never finished a compile): import and compile.
- A workspace built from the same content (`source_sha256` equals the model's digest now):
  reopen it as it is, with its edits, drafts, substitutions and NPU target; nothing compiles.
- A workspace built from other content: reopen it too (the user's build is shown, never thrown
  away unasked) and say that the model changed, offering Recompile and naming what it keeps
  and what it replaces.
- A workspace recorded before content hashes existed: its content is unknown, so it is
  compiled again, as it always was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import StudioError
from .model_digest import model_digest
from .workspace import Workspace, default_workspace_for

COMPILE, REOPEN, CHANGED = "compile", "reopen", "changed"

RECOMPILE_KEEPS = ("your edits' files (edits/), drafts, executable substitutions and the NPU target "
                   "stay in the workspace")
RECOMPILE_REPLACES = "the imported model and every phase's snapshot are rebuilt from the new file"


@dataclass(frozen=True)
class OpenPlan:
    action: str  # COMPILE, REOPEN or CHANGED
    root: Path  # the workspace folder
    reason: str  # one line for the log

    @property
    def compiles(self) -> bool:
        return self.action == COMPILE


def plan_open(model: Path, workspace_dir: Path | None = None) -> OpenPlan:
    """Decide how to open `model` (into `workspace_dir`, default its own folder). Reads the model
    (its digest) and the workspace's manifest; writes nothing. A model that cannot be read raises
    the OSError; a broken workspace folder is compiled over (Workspace.create decides what to keep)."""
    model = Path(model)
    root = Path(workspace_dir) if workspace_dir is not None else default_workspace_for(model)
    if not Workspace.is_workspace(root):
        return OpenPlan(COMPILE, root, f"{model.name}: no workspace yet: importing and compiling")
    try:
        ws = Workspace.open(root)
    except StudioError as exc:
        return OpenPlan(COMPILE, root, f"{root}: cannot reopen ({exc}): importing and compiling again")
    m = ws.manifest
    if not m.phases:
        return OpenPlan(COMPILE, root, f"{root}: no compile finished there yet: compiling")
    if not m.source_sha256:
        return OpenPlan(COMPILE, root, f"{root}: made before content hashes were recorded: compiling again")
    if m.origin and Path(m.origin).resolve() != model.resolve():
        return OpenPlan(COMPILE, root, f"{root}: holds another model ({m.origin}): importing {model}")
    if model_digest(model) == m.source_sha256:
        return OpenPlan(REOPEN, root, f"{model.name} is unchanged since {root} was built: reopened, "
                                      "nothing compiled")
    return OpenPlan(CHANGED, root, f"{model.name} has changed since {root} was built: showing the previous "
                                   f"build. Recompile: {RECOMPILE_REPLACES}; {RECOMPILE_KEEPS}.")
