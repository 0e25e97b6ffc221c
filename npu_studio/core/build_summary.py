"""What the current build contains besides the compiler's own output (no Qt).

One summary for the strip under the timeline, the timeline's and the dispatch table's
substitution marks, and their tooltips: the phases whose text is the user's (recorded edits,
uncompiled drafts), the executable substitutions switched on with their last check, and the
NPU target with the keys that differ from the bundled target it was made from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .compile.phases import SNAPSHOT_PHASES, phase_index
from .errors import StudioError
from .ir.dispatch_index import PhaseIndex
from .npu.target import target_store
from .npu.store import workspace_io
from .workspace import edit_state, substitutions
from .workspace.workspace import Workspace

# The phase each kind of substitution enters the build at (IREE's substitute flags act there).
SUBSTITUTED_FROM = {substitutions.SOURCE: "executable-sources",
                    substitutions.CONFIGURATION: "executable-configurations"}
MAX_KEYS_SHOWN = 3  # changed target keys written out in the strip; the tooltip has all


@dataclass(frozen=True)
class SubstitutionMark:
    executable: str
    kind: str
    file: str
    verdict: str  # Substitution.verdict_word
    failed: bool
    text: str  # Substitution.describe()


@dataclass(frozen=True)
class TargetSummary:
    name: str  # the file's stem, as the picker shows it
    path: Path
    bundled: bool
    origin: Path | None  # the bundled target it is, or was made from
    changes: tuple[tuple[str, object, object], ...]  # (key, bundled value, this value)
    label: str = ""  # "default (bundled)", "mine (user)", "default (recorded in this workspace)"

    def text(self, max_keys: int | None = MAX_KEYS_SHOWN) -> str:
        if self.bundled or self.origin is None:
            return f"NPU target {self.label}"
        if not self.changes:
            return f"NPU target {self.label}: the same as bundled {self.origin.stem}"
        shown = self.changes if max_keys is None else self.changes[:max_keys]
        parts = [f"{k} {_value(a)} → {_value(b)}" for k, a, b in shown]
        more = len(self.changes) - len(shown)
        if more:
            parts.append(f"+{more} more")
        n = len(self.changes)
        return (f"NPU target {self.label}: {n} key{'s' if n > 1 else ''} changed from bundled "
                f"{self.origin.stem}: {', '.join(parts)}")


@dataclass(frozen=True)
class BuildSummary:
    edited: tuple[str, ...]  # phases whose snapshot differs from the compiler's output
    drafts: tuple[str, ...]  # phases with an uncompiled edit
    substitutions: tuple[SubstitutionMark, ...]  # switched on in the build
    target: TargetSummary | None
    has_build: bool = True  # False: no workspace open (yet)

    def build_text(self) -> str:
        """One line: `Build: edited flow · uncompiled edits in stream · substituted @x (source, FAIL)`."""
        if not self.has_build:
            return "Build: none open yet"
        parts = []
        if self.edited:
            parts.append("edited " + ", ".join(self.edited))
        if self.drafts:
            parts.append("uncompiled edits in " + ", ".join(self.drafts))
        if self.substitutions:
            parts.append("substituted " + ", ".join(f"@{s.executable} ({s.kind}, {s.verdict})"
                                                    for s in self.substitutions))
        return "Build: " + (" · ".join(parts) if parts else "the compiler's output, nothing substituted")

    def tooltip(self) -> str:
        lines = [f"Edited phases: {', '.join(self.edited) or 'none'}",
                 f"Uncompiled edits: {', '.join(self.drafts) or 'none'}",
                 "Substitutions switched on: " + (", ".join(s.text for s in self.substitutions) or "none")]
        if self.target is not None:
            lines.append(f"{self.target.text(max_keys=None)}\n{self.target.path}")
        return "\n".join(lines)

    @property
    def has_failing_substitution(self) -> bool:
        return any(s.failed for s in self.substitutions)

    def phase_marks(self) -> dict[str, list[SubstitutionMark]]:
        """Per snapshot phase, the substitutions its text contains (from the phase each enters at)."""
        marks: dict[str, list[SubstitutionMark]] = {}
        for s in self.substitutions:
            first = phase_index(SUBSTITUTED_FROM[s.kind])
            for phase in SNAPSHOT_PHASES:
                if phase_index(phase) >= first:
                    marks.setdefault(phase, []).append(s)
        return marks

    def dispatch_marks(self, indexes: dict[str, PhaseIndex]) -> dict[int, list[SubstitutionMark]]:
        """Per (flow-linked) dispatch number, the substitutions of its executable, found in any
        phase that names executables (the numbers are the same in every phase)."""
        by_name: dict[str, list[SubstitutionMark]] = {}
        for s in self.substitutions:
            by_name.setdefault(s.executable, []).append(s)
        marks: dict[int, list[SubstitutionMark]] = {}
        for index in indexes.values():
            for rec in index.dispatches:
                if rec.executable in by_name and rec.index not in marks:
                    marks[rec.index] = by_name[rec.executable]
        return marks


def _value(v: object) -> str:
    return "(none)" if v is None else f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def summarize_target(path: Path, ws: Workspace | None = None) -> TargetSummary:
    """The target at `path` against the bundled one it is or came from. A workspace's recorded copy
    is named for the file it was copied from and compared by its own text (it may have been edited
    since). The one naming the summary, the toolbar's picker and the target dock use."""
    path = Path(path)
    recorded = workspace_io.recorded_target(ws) if ws is not None else None
    is_record = recorded is not None and recorded.path == path
    source = recorded.origin if is_record else path
    origin = target_store.bundled_origin(source)
    bundled = not is_record and target_store.is_bundled(path)
    changes = () if bundled or origin is None else tuple(target_store.changed_keys(path, origin))
    label = (f"{source.stem} (recorded in this workspace)" if is_record
             else f"{path.stem} (bundled)" if bundled else f"{path.stem} (user)")
    return TargetSummary(source.stem, path, bundled, origin, changes, label)


def summarize(ws: Workspace | None, target: Path | None, drafts=()) -> BuildSummary:
    """The summary of `ws`'s build (None: nothing open) with `target` the NPU target in use."""
    if ws is None:
        return BuildSummary((), (), (), summarize_target(target) if target is not None else None, has_build=False)
    edited = tuple(p for p in SNAPSHOT_PHASES if p in ws.manifest.phases and _edited(ws, p))
    subs = tuple(SubstitutionMark(s.name, s.kind, s.file, s.verdict_word, s.failed_check, s.describe())
                 for s in substitutions.applied(ws))
    ordered_drafts = tuple(p for p in SNAPSHOT_PHASES if p in set(drafts))
    return BuildSummary(edited, ordered_drafts, subs, summarize_target(target, ws) if target is not None else None)


def _edited(ws: Workspace, phase: str) -> bool:
    try:
        return edit_state.is_edited(ws, phase)
    except StudioError:  # an unreadable snapshot: not known to be the user's (the IR view says why)
        return False
