"""One model's folder: input, imported MLIR, snapshots, edits, build, manifest.

Layout (all paths in the manifest are relative to the workspace):

    manifest.json           what is here and how it was made (written last)
    source/<model file>     the original input, copied
    imported.mlir           the import result: the `start` phase
    phases/NN.<phase>.mlir  the snapshot after each phase (01.input .. 12.vm)
    edits/NN.<phase>.<k>.mlir  every edited snapshot the user resumed from
    edits/drafts/NN.<phase>.mlir  edits not compiled yet (kept when the app closes)
    module.vmfb             the build of the current snapshots
    stderr.log              compiler diagnostics of the last compile
    crash-reproducer.mlir   only after a compiler crash
    variants/<name>/        a build variant's snapshots, module and dumps (variants.py)
    profiles/<build>.*      records about a build: compile profile, executable times, Tracy capture
    .lock                   held by the one process writing (lock.py)

A workspace is a transaction log, not a scratch folder: imports, compiles and
resumes write into a staging folder and publish with one journal commit
(publish_journal.py), so a failure or an interruption at any moment leaves
the previous good state. The user's files (edits/, drafts, npu/target.toml,
substitutions, anything the app did not write) are never deleted or
replaced by a recompile. Reopening a workspace reads the manifest and
compiles nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from pathlib import Path

from ..compile.compiler import CompileResult, PhaseTiming, ProgressCallback, SnapshotCallback, snapshot_name
from ..compile.importer import MLIR_SUFFIXES, check_model_file, import_model
from ..compile.options import CompileOptions
from ..compile.params import ARCHIVE_NAME, ParamOptions
from ..compile.phases import SNAPSHOT_PHASES, phase_index, phases_after
from ..errors import StudioError, WorkspaceError
from ..paths import workspaces_dir
from ..textio import read_text
from . import trust
from .confine import remove_inside, write_text_inside
from .edits import publish_edit, stage_edit
from .lock import LOCK_NAME, ensure_writable_folder
from .manifest import DEFAULT_TARGET, MANIFEST, STALE, Manifest
from .model_digest import model_digest
from .publish_journal import JOURNAL, STAGING_PREFIX, Publish
from .transaction import Transaction, recover_if_free

# What a folder without a manifest may hold and still be taken as a workspace
# (the leftovers of a failed import); anything else is the user's and we stay out.
_OUR_NAMES = {LOCK_NAME, JOURNAL, "source", "imported.mlir", "imported.mlirbc", ARCHIVE_NAME, "phases",
              "module.vmfb", "stderr.log", "crash-reproducer.mlir", "edits", "npu"}


def default_workspace_for(model: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(Path(model).resolve())).hexdigest()[:8]
    # letters, digits and .+- only: a folder name every tool (and onnx's checker) can take
    stem = re.sub(r"[^\w.+-]", "_", Path(model).stem, flags=re.ASCII)[:64]
    return workspaces_dir() / f"{stem}-{digest}"


class Workspace:
    def __init__(self, root: Path, manifest: Manifest):
        # absolute: staging, publishing and the compiler's children must not depend on the current folder
        self.root = Path(root).absolute()
        self.manifest = manifest
        # A re-import waiting to be published with the next compile: its transaction, begun (locked).
        self._pending: Transaction | None = None

    # -- creating and opening -------------------------------------------------

    @classmethod
    def create(cls, model: Path, root: Path | None = None, *, target: str = DEFAULT_TARGET,
               params: ParamOptions | None = ParamOptions()) -> "Workspace":
        """Import `model` into the workspace at `root` (default: its folder under the user cache).

        A new folder (or the leftovers of a failed import) gets the import at
        once. Over an existing workspace the import is staged and published
        together with the next compile, and the workspace stays locked until
        then: a failed import or compile keeps the previous build. Weights of
        at least `params.threshold_bytes` go to a parameter archive (None
        keeps every weight inline in the IR).
        """
        model = Path(model).absolute()
        root = Path(root).absolute() if root is not None else default_workspace_for(model)
        check_model_file(model)  # a bad model never creates, locks or touches the workspace
        made_here = _new_folder(root)  # only a folder we make (or found empty) counts as created here
        ensure_writable_folder(root)
        txn = Transaction(root).begin()
        try:
            previous = Manifest.load(root) if (root / MANIFEST).is_file() else None
            if previous is None:
                _refuse_foreign_folder(root)
            staging = txn.staging
            t0 = time.perf_counter()
            result = import_model(model, staging / "imported.mlir", params)
            import_seconds = time.perf_counter() - t0
            keep_source_copy(model, staging / "source")
            digest = model_digest(model)  # before the import reads it: a later change shows as changed
            manifest = Manifest(
                source=f"source/{model.name}",
                origin=str(model.resolve()),
                source_sha256=digest,
                imported=result.mlir_path.name,
                target=target,
                import_seconds=import_seconds,
                params=archive_record(params, result.parameters),
            )
            if previous is not None:  # the user's history stays with the model
                manifest.edits, manifest.extra = previous.edits, previous.extra
                # so do executable substitutions (their files stay); verdicts were about the old build
                manifest.substitutions = [{**r, "verdict": None} for r in previous.substitutions]
                manifest.variants = previous.variants  # their definitions and builds (of the model as it was)
            ws = cls(root, manifest)
            if previous is None:
                ws.stage_import(txn.publish, None)
                txn.commit(manifest.to_json())
                txn.end()
                if made_here:
                    trust.record_created(root)
            else:
                ws._pending = txn  # published (or dropped) by the next compile
            return ws
        except BaseException:
            txn.end()
            raise

    def stage_import(self, publish: Publish, previous: Manifest | None) -> None:
        """Add the staged import (source copy, imported MLIR, archive) to `publish`."""
        staging, m = publish.staging, self.manifest
        for path in sorted((staging / "source").rglob("*")):
            if path.is_file():
                publish.move(path, str(path.relative_to(staging)))
        publish.move(staging / m.imported, m.imported)
        if m.params:
            publish.move(staging / m.params["archive"], m.params["archive"])
        if previous is not None:
            for old in (previous.imported, previous.params["archive"] if previous.params else None, previous.source):
                if old and old not in (m.imported, m.source, m.params and m.params["archive"]):
                    publish.delete(old)

    @property
    def pending_import(self) -> Path | None:
        """The staging folder of an import not published yet."""
        return self._pending.staging if self._pending else None

    def abandon_pending(self) -> None:
        """Drop an unpublished import and unlock; the workspace keeps its previous state."""
        if self._pending is not None:
            txn, self._pending = self._pending, None
            txn.end()
            if (self.root / MANIFEST).is_file():
                self.manifest = Manifest.load(self.root)

    @classmethod
    def open(cls, root: Path) -> "Workspace":
        root = Path(root).absolute()
        if root.exists() and not root.is_dir():
            raise WorkspaceError(root, "is a file, not a workspace folder")
        if (root / JOURNAL).is_file() or any(root.glob(STAGING_PREFIX + "*")):
            recover_if_free(root)
        if not (root / MANIFEST).exists():
            raise WorkspaceError(root, "not an NPU Studio workspace (no manifest.json)")
        return cls(root, Manifest.load(root))

    @staticmethod
    def is_workspace(path: Path) -> bool:
        return (Path(path) / MANIFEST).is_file()

    def save(self) -> None:
        """Write the manifest (atomically, while holding the workspace)."""
        if self._pending is not None:
            raise WorkspaceError(self.root, "an import is waiting for its compile; compile first")
        with self.transaction():
            self.manifest.save(self.root)

    def transaction(self, *, wait: float = 0.0) -> Transaction:
        """A write to this workspace (not begun yet): `with ws.transaction() as txn:` (transaction.py)."""
        return Transaction(self.root, wait=wait)

    # -- paths ----------------------------------------------------------------

    @property
    def source_path(self) -> Path:
        return self.root / self.manifest.source

    @property
    def user_model_path(self) -> Path:
        """The file the user opened, or our copy of it when it has gone."""
        origin = Path(self.manifest.origin) if self.manifest.origin else None
        return origin if origin is not None and origin.is_file() else self.source_path

    @property
    def imported_path(self) -> Path:
        return self.root / self.manifest.imported

    @property
    def params_path(self) -> Path | None:
        """The parameter archive the IR's `#stream.parameter.named` references read from, if any."""
        return self.root / self.manifest.params["archive"] if self.manifest.params else None

    @property
    def vmfb_path(self) -> Path | None:
        return self.root / self.manifest.vmfb if self.manifest.vmfb else None

    def snapshot_path(self, phase: str) -> Path:
        if phase == "start":
            return self.imported_path
        phase_index(phase)
        rec = self.manifest.phases.get(phase)
        return self.root / (rec.file if rec is not None else f"phases/{snapshot_name(phase)}")

    def snapshots(self) -> dict[str, Path]:
        """Existing snapshots by phase, in pipeline order."""
        return {
            p: self.root / rec.file
            for p in SNAPSHOT_PHASES
            if (rec := self.manifest.phases.get(p)) is not None
        }

    def phase_of(self, snapshot: Path) -> str | None:
        """The phase the workspace recorded for this file, if it is one of ours."""
        snapshot = Path(snapshot).resolve()
        if snapshot == self.imported_path.resolve():
            return "start"
        for phase, path in self.snapshots().items():
            if path.resolve() == snapshot:
                return phase
        for phase in SNAPSHOT_PHASES:  # an edit kept as a draft: errors of a failed resume name it
            if self.draft_path(phase).resolve() == snapshot:
                return phase
        return None

    # -- compiling ------------------------------------------------------------

    def compile_options(self, **changes) -> CompileOptions:
        """The options of this workspace's compiles (its backend and its executable substitutions), with `changes`."""
        return CompileOptions(target=self.manifest.target,
                              extra_flags=tuple(self.substitution_flags())).with_(**changes)

    def substitution_flags(self) -> list[str]:
        """The --iree-hal-substitute-executable-* flags of every substitution switched on."""
        from .substitutions import active_flags

        return active_flags(self)

    def compile_job(self, *, target: str | None = None, options: CompileOptions | None = None,
                    on_progress: ProgressCallback | None = None, on_snapshot: SnapshotCallback | None = None):
        """A job compiling the imported module from the start and publishing the result."""
        from .job import WorkspaceJob

        options = options or self.compile_options(**({"target": target} if target else {}))
        self.manifest.target = options.target
        return WorkspaceJob(self, options.with_(from_phase="start"), on_progress=on_progress, on_snapshot=on_snapshot)

    def resume_job(self, phase: str, text: str | None = None, *, on_progress: ProgressCallback | None = None,
                   display_path: Path | None = None):
        """A job resuming from `phase`; `text` is an edit of that phase's snapshot.

        The edit is kept as a draft first; only a successful compile makes it
        the phase's snapshot (and records it under edits/). Errors name
        `display_path` (default: the draft) with line and column.
        """
        from .job import WorkspaceJob

        if phase not in SNAPSHOT_PHASES:
            raise WorkspaceError(self.root, f"cannot resume from phase {phase!r}")
        if self._pending is not None:
            raise WorkspaceError(self.root, "an import is waiting for its compile; compile first")
        if text is None and not self.snapshot_path(phase).is_file():
            raise WorkspaceError(self.snapshot_path(phase), f"no snapshot for phase {phase}; compile first")
        return WorkspaceJob(self, self.compile_options(from_phase=phase), text=text, on_progress=on_progress,
                            display_path=display_path)

    def finish(self, result: CompileResult) -> None:
        """Check that `result` is this workspace's published build (jobs publish when they succeed)."""
        if self.vmfb_path is None or result.vmfb != self.vmfb_path:
            raise WorkspaceError(self.root, "this compile result was not published to this workspace")

    def keep_finished(self, finished: list[PhaseTiming]) -> None:
        """After a cancel: the job has already published the phases it kept (see WorkspaceJob); read them back."""
        if finished and (self.root / MANIFEST).is_file():
            self.manifest = Manifest.load(self.root)

    def compile(self, *, target: str | None = None, on_progress: ProgressCallback | None = None,
                on_snapshot: SnapshotCallback | None = None) -> CompileResult:
        return self.compile_job(target=target, on_progress=on_progress, on_snapshot=on_snapshot).run()

    def resume(self, phase: str, text: str | None = None, *, on_progress: ProgressCallback | None = None,
               display_path: Path | None = None) -> CompileResult:
        return self.resume_job(phase, text, on_progress=on_progress, display_path=display_path).run()

    # -- drafts: edited text not compiled yet, kept across sessions ---------------

    def draft_path(self, phase: str) -> Path:
        return self.root / "edits" / "drafts" / snapshot_name(phase)

    _draft_path = draft_path

    def save_draft(self, phase: str, text: str) -> Path:
        return write_text_inside(self.root, self.draft_path(phase), text)

    def drafts(self, unreadable: list[str] | None = None) -> dict[str, str]:
        """The uncompiled edits by phase. One that cannot be read is left on disk as it is (it is the
        user's) and its reason, naming it, goes to `unreadable`."""
        found = {}
        for phase in SNAPSHOT_PHASES:
            path = self.draft_path(phase)
            if not path.exists():
                continue
            try:
                found[phase] = read_text(path)
            except StudioError as exc:
                if unreadable is not None:
                    unreadable.append(f"{exc} (draft of {phase}, kept as it is)")
        return found

    def discard_draft(self, phase: str) -> None:
        remove_inside(self.root, self.draft_path(phase))  # through a link: refused, never followed

    def record_edit(self, phase: str, text: str) -> Path:
        """Make `text` the phase's snapshot without compiling: kept under edits/, later phases go stale."""
        with self.transaction() as txn:
            manifest = Manifest.from_json(self.manifest.to_json())
            kept = stage_edit(self.root, txn.publish, manifest, phase, text)
            for later in phases_after(phase):
                if later in manifest.phases:
                    manifest.phases[later].state = STALE
            publish_edit(self, txn, manifest, phase, text)
        return kept



def _new_folder(root: Path) -> bool:
    """Whether `root` is missing or holds nothing but a lock and staging folders (of an import just failed)."""
    try:
        return all(e.name == LOCK_NAME or e.name.startswith(STAGING_PREFIX) for e in root.iterdir())
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _refuse_foreign_folder(root: Path) -> None:
    foreign = sorted(e.name for e in root.iterdir()
                     if e.name not in _OUR_NAMES and not e.name.startswith((STAGING_PREFIX, ".manifest.json.")))
    if foreign:
        raise WorkspaceError(root, f"folder holds files that are not an NPU Studio workspace's ({foreign[0]}); "
                                   "refusing to use it")


def archive_record(options: ParamOptions | None, parameters: list) -> dict | None:
    if options is None or not parameters:
        return None
    return {"archive": ARCHIVE_NAME, "threshold": options.threshold_bytes,
            "count": len(parameters), "bytes": sum(p.nbytes for p in parameters)}


def keep_source_copy(model: Path, folder: Path) -> None:
    """Keep the user's model and its ONNX external data files in `folder`, as cheaply as the filesystem allows.

    The model file is hard-linked (we never write to it, and a 200 MB model
    then costs nothing). External data files are cloned or copied instead:
    ONNX refuses to load external data that has several hard links (its guard
    against hard-link attacks), so linking them would break the user's model.
    """
    model = model.resolve()
    files = [model]
    if model.suffix.lower() == ".onnx":
        from ..compile.onnx_model import external_data_files

        files += external_data_files(model)
    for src in files:
        dest = folder / src.relative_to(model.parent)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.unlink(missing_ok=True)
        if src == model:
            try:
                os.link(src, dest)
                continue
            except OSError:  # another filesystem, or links not allowed
                pass
        _clone_or_copy(src, dest)


def _clone_or_copy(src: Path, dest: Path) -> None:
    """A copy-on-write clone where the filesystem has them (btrfs, xfs), else a plain copy."""
    import fcntl

    ficlone = 0x40049409
    try:
        with open(src, "rb") as fin, open(dest, "wb") as fout:
            fcntl.ioctl(fout.fileno(), ficlone, fin.fileno())
        shutil.copystat(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def is_model_file(path: Path) -> bool:
    return Path(path).suffix.lower() in (".onnx", *MLIR_SUFFIXES)


def compile_model(
    model: Path,
    workspace: Path | None = None,
    *,
    target: str = DEFAULT_TARGET,
    on_progress: ProgressCallback | None = None,
    params: ParamOptions | None = ParamOptions(),
    on_snapshot: SnapshotCallback | None = None,
) -> Workspace:
    """Import and compile `model` into a workspace, keeping the user's files there; returns the workspace.
    `on_snapshot(phase, path)` sees each snapshot as the compiler finishes it (compiler.SnapshotCallback)."""
    ws = Workspace.create(model, workspace, target=target, params=params)
    ws.compile(on_progress=on_progress, on_snapshot=on_snapshot)
    return ws


def open_or_compile(path: Path, *, target: str = DEFAULT_TARGET) -> Workspace:
    """A workspace path opens as it is; a model file is compiled into its default workspace."""
    path = Path(path)
    if path.is_dir():
        return Workspace.open(path)
    return compile_model(path, target=target)
