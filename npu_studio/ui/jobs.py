"""One manager for every background job (import, compile, resume, index, NPU pipeline, simulation).

Each job runs `fn(report, token)` on its own thread (`workers.Worker`). Starting a job asks the
session for a new generation of its kind (`Session.begin`); when the job ends, its result reaches
`on_done` only if that generation is still current (a newer job of the kind, or another model,
makes it outdated and the result is dropped). `cancel(kind)` stops one kind, `stop_all()` stops
and waits for everything (the window calls it on close), like Spyder's WorkerManager.

Jobs never share a core object with the GUI while they change it: they work on their own
objects (a workspace they open themselves, copies of indexes) and hand them back as results.

A job that would run what an untrusted workspace holds fails with UntrustedWorkspace before it
runs anything (core/workspace/trust.py); the manager then asks once, through `ask_trust` (the
shell's dialog): trusted, the decision is kept in the user's config and the job starts again;
declined, the job fails as any other.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from PySide6 import QtCore

from ..core.session import Session
from ..core.workspace import trust
from .workers import Worker


class CancelToken:
    """Cancel that reaches work not started yet: `attach` a stopper, it runs at once if cancelled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._stoppers: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def attach(self, stop: Callable[[], None]) -> None:
        with self._lock:
            if not self._cancelled:
                self._stoppers.append(stop)
                return
        stop()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            stoppers, self._stoppers = self._stoppers, []
        for stop in stoppers:
            stop()


@dataclass
class Job:
    kind: str
    generation: int
    worker: Worker
    token: CancelToken


class JobManager(QtCore.QObject):
    sig_running_changed = QtCore.Signal(str, bool)  # kind, whether a job of that kind now runs

    def __init__(self, session: Session, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.session = session
        self._jobs: list[Job] = []
        self.history: list[str] = []  # the kind of every job started, in order (the job log)
        # (workspace root, what would run) -> whether the user trusts it; None: never asked, the job fails
        self.ask_trust: Callable[[Any, str], bool] | None = None

    def start(self, kind: str, fn: Callable[[Callable[..., None], CancelToken], Any], *,
              on_done: Callable[[Any, int], None],
              on_failed: Callable[[Exception, str, int], None] | None = None,
              on_progress: Callable[..., None] | None = None,
              on_finished: Callable[[int], None] | None = None) -> int:
        """Run `fn` for a new generation of `kind`, cancelling the older jobs of that kind.

        `on_done(result, generation)` / `on_failed(exc, traceback, generation)` /
        `on_progress(*args)` run on the GUI thread, only while the generation is current;
        `on_finished(generation)` always runs, once the thread has ended.
        """
        self.cancel(kind)
        self.history.append(kind)
        generation = self.session.begin(kind)
        token = CancelToken()
        worker = Worker(lambda report: fn(report, token), cancel=token.cancel, parent=self)
        job = Job(kind, generation, worker, token)
        current = lambda: self.session.is_current(kind, generation)  # noqa: E731
        if on_progress is not None:
            worker.sig_progress.connect(lambda args: on_progress(*args) if current() else None)
        worker.sig_done.connect(lambda result: on_done(result, generation) if current() else None)
        again = lambda: self.start(kind, fn, on_done=on_done, on_failed=on_failed,  # noqa: E731
                                   on_progress=on_progress, on_finished=on_finished)
        worker.sig_failed.connect(lambda exc, tb: self._failed(exc, tb, generation, on_failed, again)
                                  if current() else None)
        worker.finished.connect(lambda: self._finished(job, on_finished))
        self._jobs.append(job)
        self.sig_running_changed.emit(kind, True)
        worker.start()
        return generation

    def _failed(self, exc: Exception, tb: str, generation: int, on_failed, again) -> None:
        if isinstance(exc, trust.UntrustedWorkspace) and self.ask_trust is not None \
                and self.ask_trust(exc.root, exc.action):
            trust.grant(exc.root)
            again()
            return
        if on_failed is not None:
            on_failed(exc, tb, generation)

    def _finished(self, job: Job, on_finished) -> None:
        if job in self._jobs:
            self._jobs.remove(job)
        # `finished` is sent from the thread just before it ends: let it end before the worker can be
        # deleted (a manager dropped at once would destroy a QThread still running, which aborts)
        job.worker.wait()
        job.worker.deleteLater()
        if on_finished is not None:
            on_finished(job.generation)
        self.sig_running_changed.emit(job.kind, self.is_running(job.kind))

    def is_running(self, kind: str | None = None) -> bool:
        return any(kind is None or j.kind == kind for j in self._jobs)

    def cancel(self, kind: str) -> None:
        for job in self._jobs:
            if job.kind == kind:
                job.token.cancel()

    def stop_all(self, wait_ms: int = 30000) -> None:
        """Cancel every job and wait for their threads (the window is closing)."""
        jobs = list(self._jobs)
        for job in jobs:
            job.token.cancel()
        for job in jobs:
            job.worker.wait(wait_ms)
