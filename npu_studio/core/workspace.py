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

Reopening a workspace reads the manifest and compiles nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import toolchain
from .compile_options import DEFAULT_TARGET, CompileOptions
from .compiler import CompileJob, CompileResult, PhaseTiming, ProgressCallback, snapshot_name
from .errors import StudioError
from .importer import MLIR_SUFFIXES, import_model
from .params import ARCHIVE_NAME, ParamOptions
from .phases import SNAPSHOT_PHASES, phase_index, phases_after

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1

# Phase states, as the timeline shows them.
DONE, EDITED, STALE, PENDING = "done", "edited", "stale", "pending"


class WorkspaceError(StudioError):
    pass


def default_root() -> Path:
    """Where workspaces go unless told otherwise: $NPU_STUDIO_HOME or the user cache."""
    env = os.environ.get("NPU_STUDIO_HOME")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "npu-studio" / "workspaces"


def default_workspace_for(model: Path) -> Path:
    digest = hashlib.sha256(str(Path(model).resolve()).encode()).hexdigest()[:8]
    return default_root() / f"{Path(model).stem}-{digest}"


@dataclass
class PhaseRecord:
    file: str
    seconds: float | None = None
    size_bytes: int = 0
    state: str = DONE


@dataclass
class Manifest:
    source: str
    imported: str
    origin: str = ""  # absolute path of the file the user opened
    target: str = DEFAULT_TARGET
    compiler_version: str = ""
    phases: dict[str, PhaseRecord] = field(default_factory=dict)
    vmfb: str | None = None
    command: list[str] = field(default_factory=list)
    total_seconds: float | None = None
    import_seconds: float | None = None
    from_phase: str = "start"
    edits: list[dict] = field(default_factory=list)
    params: dict | None = None  # {"archive": "params.irpa", "threshold": bytes} when weights are outside the IR
    options: dict | None = None  # the CompileOptions of the last compile (CompileOptions.to_json)
    version: int = MANIFEST_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        data = json.loads(text)
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError(f"unsupported manifest version {data.get('version')!r}")
        data["phases"] = {k: PhaseRecord(**v) for k, v in data.get("phases", {}).items()}
        return cls(**data)


class Workspace:
    def __init__(self, root: Path, manifest: Manifest):
        self.root = Path(root)
        self.manifest = manifest

    # -- creating and opening -------------------------------------------------

    @classmethod
    def create(cls, model: Path, root: Path | None = None, *, target: str = DEFAULT_TARGET,
               params: ParamOptions | None = ParamOptions()) -> "Workspace":
        """Import `model` into a fresh workspace (an existing one at `root` is replaced).

        Weights of at least `params.threshold_bytes` go to a parameter archive
        (None keeps every weight inline in the IR).
        """
        model = Path(model)
        root = Path(root) if root is not None else default_workspace_for(model)
        if root.exists():
            if not (root / MANIFEST).is_file() and any(root.iterdir()):
                raise WorkspaceError(root, "folder exists and is not an NPU Studio workspace; refusing to overwrite it")
            shutil.rmtree(root)
        (root / "source").mkdir(parents=True)
        t0 = time.perf_counter()
        result = import_model(model, root / "imported.mlir", params)
        import_seconds = time.perf_counter() - t0
        keep_source_copy(model, root / "source")
        manifest = Manifest(
            source=f"source/{model.name}",
            origin=str(model.resolve()),
            imported=result.mlir_path.name,
            target=target,
            import_seconds=import_seconds,
            params=archive_record(root, params, result.parameters),
        )
        ws = cls(root, manifest)
        ws.save()
        return ws

    @classmethod
    def open(cls, root: Path) -> "Workspace":
        root = Path(root)
        path = root / MANIFEST
        if not path.is_file():
            raise WorkspaceError(root, "not an NPU Studio workspace (no manifest.json)")
        try:
            return cls(root, Manifest.from_json(path.read_text()))
        except (ValueError, TypeError, KeyError) as exc:
            raise WorkspaceError(path, f"unreadable manifest: {exc}") from None

    @staticmethod
    def is_workspace(path: Path) -> bool:
        return (Path(path) / MANIFEST).is_file()

    def save(self) -> None:
        tmp = self.root / (MANIFEST + ".tmp")
        tmp.write_text(self.manifest.to_json())
        os.replace(tmp, self.root / MANIFEST)

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
        return self.root / "phases" / snapshot_name(phase)

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
        return None

    # -- compiling ------------------------------------------------------------

    def compile_options(self, **changes) -> CompileOptions:
        """The options of this workspace's compiles (its backend), with `changes`."""
        return CompileOptions(target=self.manifest.target).with_(**changes)

    def compile_job(self, *, target: str | None = None, options: CompileOptions | None = None,
                    on_progress: ProgressCallback | None = None) -> CompileJob:
        """A job compiling the imported module from the start; call `finish()` with its result."""
        options = options or self.compile_options(**({"target": target} if target else {}))
        self.manifest.target = options.target
        return CompileJob(
            self.imported_path, self.root, options.with_(from_phase="start"), on_progress=on_progress,
            display_path=self.user_model_path,
        )

    def resume_job(
        self, phase: str, text: str | None = None, *, on_progress: ProgressCallback | None = None
    ) -> CompileJob:
        """A job resuming from `phase`. `text` replaces that phase's snapshot first (an edit)."""
        if phase not in SNAPSHOT_PHASES:
            raise WorkspaceError(self.root, f"cannot resume from phase {phase!r}")
        snap = self.snapshot_path(phase)
        if text is not None:
            self.record_edit(phase, text)
        if not snap.is_file():
            raise WorkspaceError(snap, f"no snapshot for phase {phase}; compile first")
        return CompileJob(snap, self.root, self.compile_options(from_phase=phase), on_progress=on_progress)

    # -- drafts: edited text not compiled yet, kept across sessions ---------------

    def _draft_path(self, phase: str) -> Path:
        return self.root / "edits" / "drafts" / snapshot_name(phase)

    def save_draft(self, phase: str, text: str) -> None:
        path = self._draft_path(phase)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def drafts(self) -> dict[str, str]:
        return {p: self._draft_path(p).read_text() for p in SNAPSHOT_PHASES if self._draft_path(p).is_file()}

    def discard_draft(self, phase: str) -> None:
        self._draft_path(phase).unlink(missing_ok=True)

    def record_edit(self, phase: str, text: str) -> Path:
        """Keep the edited text under edits/ and make it the phase's snapshot; later phases go stale."""
        edits = self.root / "edits"
        edits.mkdir(exist_ok=True)
        n = sum(1 for e in self.manifest.edits if e["phase"] == phase) + 1
        kept = edits / f"{snapshot_name(phase)[:-5]}.{n}.mlir"
        kept.write_text(text)
        snap = self.snapshot_path(phase)
        snap.parent.mkdir(exist_ok=True)
        tmp = snap.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, snap)
        rec = self.manifest.phases.setdefault(phase, PhaseRecord(file=str(snap.relative_to(self.root))))
        rec.state, rec.size_bytes = EDITED, len(text.encode())
        for later in phases_after(phase):
            if later in self.manifest.phases:
                self.manifest.phases[later].state = STALE
        self.manifest.edits.append({"phase": phase, "file": str(kept.relative_to(self.root)), "time": time.time()})
        self.save()
        self.discard_draft(phase)
        return kept

    def finish(self, result: CompileResult) -> None:
        """Record a successful compile in the manifest."""
        for t in result.phases:
            self.manifest.phases[t.phase] = PhaseRecord(
                file=str(t.path.relative_to(self.root)), seconds=t.seconds, size_bytes=t.size_bytes
            )
        self.manifest.vmfb = str(result.vmfb.relative_to(self.root))
        self.manifest.command = result.command
        self.manifest.total_seconds = result.total_seconds
        self.manifest.from_phase = result.from_phase
        self.manifest.options = result.options.to_json()
        self.manifest.compiler_version = toolchain.compiler_version()
        self.save()

    def keep_finished(self, finished: list[PhaseTiming]) -> None:
        """Record the phases a cancelled compile had finished; older snapshots after them go stale."""
        if not finished:
            return
        for t in finished:
            self.manifest.phases[t.phase] = PhaseRecord(
                file=str(t.path.relative_to(self.root)), seconds=t.seconds, size_bytes=t.size_bytes
            )
        for later in phases_after(finished[-1].phase):
            if later in self.manifest.phases:
                self.manifest.phases[later].state = STALE
        self.manifest.vmfb = None  # the old build no longer matches the snapshots
        self.save()

    def compile(self, *, target: str | None = None, on_progress: ProgressCallback | None = None) -> CompileResult:
        result = self.compile_job(target=target, on_progress=on_progress).run()
        self.finish(result)
        return result

    def resume(self, phase: str, text: str | None = None, *, on_progress: ProgressCallback | None = None) -> CompileResult:
        result = self.resume_job(phase, text, on_progress=on_progress).run()
        self.finish(result)
        return result


def archive_record(root: Path, options: ParamOptions | None, parameters: list) -> dict | None:
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
        from .importer import external_data_files

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
) -> Workspace:
    """Import and compile `model` into a workspace; returns the workspace."""
    ws = Workspace.create(model, workspace, target=target, params=params)
    ws.compile(on_progress=on_progress)
    return ws


def open_or_compile(path: Path, *, target: str = DEFAULT_TARGET) -> Workspace:
    """A workspace path opens as it is; a model file is compiled into its default workspace."""
    path = Path(path)
    if path.is_dir():
        return Workspace.open(path)
    return compile_model(path, target=target)
