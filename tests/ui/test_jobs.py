"""JobManager: outdated results are dropped, cancel reaches each job, stop_all ends them all."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.session import Session  # noqa: E402
from npu_studio.ui.jobs import CancelToken, JobManager  # noqa: E402


def app_owned():
    """A parent for a test's JobManager: Qt, not Python's garbage collector, ends it and its workers,
    after the events still queued for them (a manager dropped with the test's locals died under
    pytest-qt's event processing: "pure virtual method called")."""
    from PySide6 import QtWidgets

    return QtWidgets.QApplication.instance()


def test_a_result_of_an_outdated_job_is_dropped(qtbot):
    session = Session()
    jobs = JobManager(session, app_owned())
    release = threading.Event()
    delivered, finished = [], []

    def slow(report, token):
        release.wait(30)
        return "old"

    old = jobs.start("index", slow, on_done=lambda r, g: delivered.append((r, g)), on_finished=finished.append)
    new = jobs.start("index", lambda report, token: "new", on_done=lambda r, g: delivered.append((r, g)),
                     on_finished=finished.append)
    qtbot.waitUntil(lambda: delivered == [("new", new)], timeout=10_000)
    release.set()
    qtbot.waitUntil(lambda: not jobs.is_running(), timeout=10_000)
    assert delivered == [("new", new)] and sorted(finished) == [old, new]
    # Opening another model outdates every kind: a late NPU result is dropped too.
    late = threading.Event()
    jobs.start("npu", lambda report, token: late.wait(30) and "npu", on_done=lambda r, g: delivered.append(r))
    session.clear()
    late.set()
    qtbot.waitUntil(lambda: not jobs.is_running(), timeout=10_000)
    assert delivered == [("new", new)]


def test_cancel_reaches_a_job_and_stop_all_waits_for_every_thread(qtbot):
    jobs = JobManager(Session(), app_owned())
    started = threading.Event()
    failures = []

    def until_cancelled(report, token: CancelToken):
        stopped = threading.Event()
        token.attach(stopped.set)
        started.set()
        if not stopped.wait(30):
            return "ran to the end"
        raise RuntimeError("cancelled")

    jobs.start("compile", until_cancelled, on_done=failures.append,
               on_failed=lambda exc, tb, g: failures.append(str(exc)))
    jobs.start("npu", until_cancelled, on_done=failures.append)
    assert started.wait(10)
    jobs.cancel("compile")
    qtbot.waitUntil(lambda: not jobs.is_running("compile"), timeout=10_000)
    assert failures == ["cancelled"] and jobs.is_running("npu")
    jobs.stop_all()
    assert not any(j.worker.isRunning() for j in jobs._jobs)
    qtbot.waitUntil(lambda: not jobs.is_running(), timeout=10_000)
    # A token cancelled before anything attached still stops what attaches later.
    token = CancelToken()
    token.cancel()
    hit = []
    token.attach(lambda: hit.append(1))
    assert hit == [1]
