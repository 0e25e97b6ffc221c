"""The app asks once before it runs what a sent workspace holds, and keeps the answer in the user's config
(ui/jobs.py, ui/trust_dialog.py, core/workspace/trust.py)."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtWidgets  # noqa: E402

from npu_studio.core.session import Session  # noqa: E402
from npu_studio.core.workspace import trust, variants  # noqa: E402
from npu_studio.ui import trust_dialog  # noqa: E402
from npu_studio.ui.jobs import JobManager  # noqa: E402


def app_owned():
    """A parent for a test's JobManager: Qt, not Python's garbage collector, ends it and its workers,
    after the events still queued for them (a manager dropped with the test's locals died under
    pytest-qt's event processing: "pure virtual method called")."""
    from PySide6 import QtWidgets

    return QtWidgets.QApplication.instance()


@pytest.fixture
def sent(fresh_example, tmp_path, monkeypatch):
    """The compiled example as someone sent it (a copy), with a variant recorded in it; a user trusting nothing."""
    config = tmp_path / "user-config"
    config.mkdir()
    monkeypatch.setenv("NPU_STUDIO_CONFIG", str(config))
    monkeypatch.setattr(trust, "_run_trusted", False)
    path = fresh_example.root / "manifest.json"
    data = json.loads(path.read_text())
    data["variants"] = {"v": {"flags": ["--iree-opt-level=O1"], "compiler": None, "compiler_version": "",
                              "created": 0.0, "build": None}}
    path.write_text(json.dumps(data))
    fresh_example.manifest = type(fresh_example.manifest).load(fresh_example.root)
    return fresh_example, config


def run_job(qtbot, jobs, ws):
    """A job that needs the variant's recorded options (what a build of it would run)."""
    done, failed = [], []
    jobs.start("profile", lambda report, token: variants.options_for(ws, "v").extra_flags,
               on_done=lambda r, g: done.append(r), on_failed=lambda e, tb, g: failed.append(e))
    qtbot.waitUntil(lambda: bool(done or failed) and not jobs.is_running(), timeout=20_000)
    return done, failed


def test_trusted_once_the_job_runs_and_the_answer_is_kept(qtbot, sent):
    ws, config = sent
    jobs = JobManager(Session(), app_owned())
    asked = []
    jobs.ask_trust = lambda root, action: asked.append((root, action)) or True
    files = sorted(p.name for p in ws.root.iterdir())

    done, failed = run_job(qtbot, jobs, ws)
    assert failed == [] and "--iree-opt-level=O1" in done[0]
    assert len(asked) == 1 and asked[0][0] == ws.root and "variant 'v'" in asked[0][1]
    done, failed = run_job(qtbot, jobs, ws)  # asked once: the decision is kept
    assert done and len(asked) == 1
    assert (config / trust.TRUST_FILE).is_file() and sorted(p.name for p in ws.root.iterdir()) == files


def test_declined_the_job_fails_with_one_line(qtbot, sent):
    ws, _ = sent
    jobs = JobManager(Session(), app_owned())
    jobs.ask_trust = lambda root, action: False
    done, failed = run_job(qtbot, jobs, ws)
    assert done == [] and isinstance(failed[0], trust.UntrustedWorkspace)
    assert "\n" not in str(failed[0]) and "not created by you" in str(failed[0])
    assert not trust.is_trusted(ws.root)


@pytest.mark.parametrize("button, answer", [("Trust", True), ("Cancel", False)])
def test_the_dialog_says_what_would_run_and_answers(qtbot, tmp_path, button, answer):
    seen = []

    def click():
        box = next(w for w in QtWidgets.QApplication.topLevelWidgets()
                   if isinstance(w, QtWidgets.QMessageBox) and w.isVisible())
        seen.append(box.informativeText())
        next(b for b in box.buttons() if b.text().replace("&", "") == button).click()

    QtCore.QTimer.singleShot(100, click)
    assert trust_dialog.ask(None, tmp_path, "running module.vmfb") is answer
    assert seen and seen[0].startswith("Running module.vmfb would run")
