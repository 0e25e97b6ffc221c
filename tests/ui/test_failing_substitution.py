"""A substitution whose check failed is not kept silently: the app asks Keep or Switch off."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from npu_studio.core.problems import SUBSTITUTION
from npu_studio.core.workspace import substitutions as sub_records

from .test_executables_view import _replace_in_editor


def substitute_failing(window, qtbot, ws):
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(ws.root)
    panel = window.executables
    assert panel.open_for_dispatch(0)
    # bias add -> sub: the outputs differ from the plain build by twice the bias (independent truth)
    _replace_in_editor(panel.editor.view, "arith.addf %in, %in_1", "arith.subf %in, %in_1", last=True)
    panel.time_check.setChecked(False)
    with qtbot.waitSignal(panel.sig_finished, timeout=180_000) as done:
        panel.substitute()
    assert done.args == [True]
    return panel


def test_a_failing_substitution_asks_and_switch_off_rebuilds_without_it(window, qtbot, fresh_example):
    panel = substitute_failing(window, qtbot, fresh_example)
    [record] = sub_records.load(window.workspace)
    assert record.applied and record.verdict["passed"] is False  # on in the build, check failed
    assert panel.decision.isVisible() and "FAILED" in panel.decision_label.text()
    assert window.session.problems.is_raised(SUBSTITUTION) and window.error_banner.isVisible()
    with qtbot.waitSignal(panel.sig_finished, timeout=180_000) as done:
        panel.switch_off_button.click()
    assert done.args == [True]
    [record] = sub_records.load(window.workspace)
    assert not record.applied
    assert not panel.decision.isVisible() and not window.session.problems.is_raised(SUBSTITUTION)
    assert panel.verdict.text() == "" and panel.results.rowCount() == 0  # the old FAIL is gone


def test_keep_it_on_is_remembered_for_that_verdict(window, qtbot, fresh_example):
    panel = substitute_failing(window, qtbot, fresh_example)
    panel.keep_button.click()
    [record] = sub_records.load(window.workspace)
    assert record.applied and record.kept_failing == record.verdict
    assert not panel.decision.isVisible() and not window.error_banner.isVisible()
    # reopened, it does not ask again for the same verdict
    with qtbot.waitSignal(window.sig_index_finished, timeout=120_000):
        window.open_path(fresh_example.root)
    assert not panel.decision.isVisible()

