"""A compile or resume of a workspace, done as one transaction.

`run()` holds the workspace's lock from start to end, compiles into a
staging folder and publishes the new build with one journal commit
(transaction.py): on any failure, cancel or interruption the workspace
keeps its previous build, manifest and every user file exactly as they were.
A resume's edited text is kept as a draft before anything runs; it becomes
the phase's snapshot (and an edits/ record) only when the compile succeeded.
A cancelled compile of a workspace without a build keeps the phases that had
finished (published the same way); over a good build it keeps the build.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..compile import toolchain
from ..compile.compiler import (
    EXECUTABLE_DUMPS,
    EXECUTABLES_DIR,
    CompileJob,
    CompileResult,
    PhaseTiming,
    ProgressCallback,
    SnapshotCallback,
    snapshot_name,
)
from ..compile.options import CompileOptions
from ..compile.phases import phases_after
from ..errors import Cancelled, CompileFailed, WorkspaceError
from .compiler_output import file_sha256
from .edits import publish_edit, stage_edit
from .manifest import MANIFEST, Manifest, PhaseRecord
from .transaction import Transaction


class CancellableBuild:
    """A build around one CompileJob: the phases it will write, and a cancel from any thread that reaches
    the compile under way (or stops the one about to start). Subclasses set `options` and call `_start_idle`."""

    options: CompileOptions

    def _start_idle(self) -> None:
        self._cancel = threading.Event()
        self._job: CompileJob | None = None

    @property
    def expected_phases(self) -> tuple[str, ...]:
        return self.options.phases()

    def cancel(self) -> None:
        self._cancel.set()
        job = self._job
        if job is not None:
            job.cancel()


class WorkspaceJob(CancellableBuild):
    """`run()` blocks and returns the published result; `cancel()` may be called from any thread."""

    def __init__(self, ws, options: CompileOptions, *, text: str | None = None,
                 on_progress: ProgressCallback | None = None, display_path: Path | None = None,
                 on_snapshot: SnapshotCallback | None = None,
                 before_publish: Callable[[CompileResult], None] | None = None):
        self.ws = ws
        # Called with the staged build (under the lock) before it is published: it may complete
        # ws.manifest (a substitution's verdict) or raise, and the previous build stays.
        self.before_publish = before_publish
        self.options = options
        self.from_phase = options.from_phase
        self.text = text
        self.on_progress = on_progress
        self.on_snapshot = on_snapshot
        self.display_path = display_path
        self._start_idle()

    def run(self) -> CompileResult:
        ws = self.ws
        pending, ws._pending = ws._pending, None
        txn = pending or ws.transaction()  # a pending import's transaction is begun: it holds the lock
        try:
            txn.begin()
            if self.text is not None and self.display_path is None:
                # Text without a file of its own (the app's editor) is kept as a draft before anything can fail.
                self.display_path = ws.save_draft(self.from_phase, self.text)
            # While the compiler runs: the manifest on disk read (under the lock) and checked, and the
            # compiler's version asked (a process of its own) for the new manifest.
            with ThreadPoolExecutor(max_workers=2) as pool:
                pool.submit(toolchain.compiler_version)
                previous = pool.submit(_on_disk, ws.root)
                return self._compile_and_publish(txn, previous, imported=pending is not None)
        except BaseException:
            if (ws.root / MANIFEST).is_file():
                ws.manifest = Manifest.load(ws.root)  # the in-memory state follows what is on disk
            raise
        finally:
            txn.end()

    def _compile_and_publish(self, txn: Transaction, on_disk: Future[Manifest | None],
                             imported: bool) -> CompileResult:
        ws, phase, staging = self.ws, self.from_phase, txn.staging
        if phase == "start":
            source = staging / ws.manifest.imported if imported else ws.imported_path
            display = ws.user_model_path
        elif self.text is not None:
            source = staging / "input" / snapshot_name(phase)
            source.parent.mkdir()
            source.write_text(self.text, encoding="utf-8")
            display = self.display_path
        else:
            source = ws.snapshot_path(phase)
            display = self.display_path or source
        if not source.is_file():
            raise WorkspaceError(source, f"the {phase} snapshot is missing; compile from the start")
        self._job = CompileJob(source, staging / "build", self.options, on_progress=self.on_progress,
                               on_snapshot=self.on_snapshot, display_path=display, keep_dir=ws.root)
        if self._cancel.is_set():
            raise Cancelled()
        try:
            result = self._job.run()
        except CompileFailed as exc:
            if exc.path is not None and exc.path.is_relative_to(staging):  # a file about to vanish
                raise CompileFailed(display, exc.reason, log=exc.log, reproducer=exc.reproducer) from None
            raise
        except Cancelled as exc:
            self._keep_finished(txn, exc, on_disk.result(), imported)
            raise
        if self.before_publish is not None:
            self.before_publish(result)
        return self._publish(txn, result, on_disk.result(), imported)

    def _keep_finished(self, txn: Transaction, exc: Cancelled, previous: Manifest | None, imported: bool) -> None:
        """Publish the phases a cancelled compile finished, unless that would replace a good build."""
        ws = self.ws
        if not exc.finished or imported or (previous is not None and previous.vmfb is not None):
            exc.finished = []
            return
        publish = txn.publish
        manifest = Manifest.from_json(ws.manifest.to_json())
        kept = []
        for t in exc.finished:
            dest = f"phases/{snapshot_name(t.phase)}"
            digest = file_sha256(t.path)
            kept.append(PhaseTiming(t.phase, publish.move(t.path, dest), t.seconds, t.size_bytes))
            manifest.phases[t.phase] = PhaseRecord(file=dest, seconds=t.seconds, size_bytes=t.size_bytes,
                                                   sha256=digest, compiled_from=self.from_phase)
        for later in phases_after(kept[-1].phase):
            if later in manifest.phases:
                manifest.phases[later].state = "stale"
        txn.commit(manifest.to_json())
        ws.manifest = manifest
        exc.finished = kept

    def _publish(self, txn: Transaction, result: CompileResult, previous: Manifest | None,
                 imported: bool) -> CompileResult:
        ws, staging, publish = self.ws, txn.staging, txn.publish
        manifest = Manifest.from_json(ws.manifest.to_json())
        if previous is not None:  # build variants made through another handle of this workspace stay listed
            manifest.variants = previous.variants
        if imported:
            ws.stage_import(publish, previous)
        if result.from_phase == "start":
            manifest.phases = {}
        elif self.text is not None:
            stage_edit(ws.root, publish, manifest, result.from_phase, self.text)
        published = []
        for t in result.phases:
            dest = f"phases/{snapshot_name(t.phase)}"
            digest = file_sha256(t.path)  # before the move: what the compiler wrote
            published.append(PhaseTiming(t.phase, publish.move(t.path, dest), t.seconds, t.size_bytes))
            manifest.phases[t.phase] = PhaseRecord(file=dest, seconds=t.seconds, size_bytes=t.size_bytes,
                                                   sha256=digest, compiled_from=result.from_phase)
        if previous is not None:  # snapshots of the old build that the new one does not have
            kept = {r.file for r in manifest.phases.values()}
            for rec in previous.phases.values():
                if rec.file not in kept:
                    publish.delete(rec.file)
        vmfb = None  # a compile that stops early (--compile-to) builds no module: the old one goes
        if result.vmfb is not None:
            vmfb = publish.move(result.vmfb, "module.vmfb")
        elif previous is not None and previous.vmfb is not None:
            publish.delete(previous.vmfb)
        stage_executable_dumps(publish, staging / "build", ws.root)
        publish.move(staging / "build" / "stderr.log", "stderr.log")
        manifest.vmfb = "module.vmfb" if vmfb is not None else None
        manifest.command = result.command
        manifest.total_seconds = result.total_seconds
        manifest.from_phase = result.from_phase
        manifest.options = result.options.to_json()
        manifest.compiler_version = toolchain.compiler_version()
        publish_edit(ws, txn, manifest, result.from_phase, self.text)
        return CompileResult(published, vmfb, result.command, result.stderr, result.total_seconds,
                             result.from_phase, result.extra, result.options)



def _on_disk(root: Path) -> Manifest | None:
    return Manifest.load(root) if (root / MANIFEST).is_file() else None


def stage_executable_dumps(publish, build_dir: Path, root: Path) -> None:
    """Add a compile's executable dumps to a workspace publish (publish_journal.py).

    A kind of dump the compile did not write (a resume that started past
    its pass) keeps the workspace's old files; otherwise the new files
    replace the old ones, and old files without a new namesake go.
    """
    for kind in EXECUTABLE_DUMPS:
        new = Path(build_dir) / EXECUTABLES_DIR / kind
        files = sorted(f for f in new.iterdir() if f.is_file()) if new.is_dir() else []
        if not files:
            continue
        for f in files:
            publish.move(f, f"{EXECUTABLES_DIR}/{kind}/{f.name}")
        old = Path(root) / EXECUTABLES_DIR / kind
        names = {f.name for f in files}
        for f in sorted(old.iterdir()) if old.is_dir() else ():
            if f.name not in names:
                publish.delete(f"{EXECUTABLES_DIR}/{kind}/{f.name}")
