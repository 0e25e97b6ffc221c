"""PhaseTimeline: segments, states, widths, selection by click and keys."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from npu_studio.core.compile.phases import SNAPSHOT_PHASES  # noqa: E402
from npu_studio.ui.timeline import (  # noqa: E402
    STATES,
    PhaseTimeline,
    format_seconds,
    format_size,
    phase_label,
)

Key = QtCore.Qt.Key


@pytest.fixture
def tl(qtbot):
    w = PhaseTimeline()
    qtbot.addWidget(w)
    w.resize(1600, 60)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_labels():
    assert format_seconds(0.123) == "0.12 s"
    assert format_seconds(12.34) == "12.3 s"
    assert format_size(9318) == "9.1 KiB"
    assert format_size(800) == "800 bytes"
    assert format_size(3 * 1024 * 1024) == "3.0 MiB"


def test_default_phases_in_pipeline_order(tl):
    assert tl.phases() == list(SNAPSHOT_PHASES)
    xs = [tl.segment_rect(p).left() for p in tl.phases()]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)


def test_insert_extra_phase_after_flow(tl):
    tl.set_phase_info("flow", state="done", seconds=0.5)
    tl.insert_phase("npu", after="flow")
    phases = tl.phases()
    assert phases[phases.index("flow") + 1] == "npu"
    assert tl.phase_info("flow").seconds == 0.5  # info kept
    tl.set_phases(list(SNAPSHOT_PHASES))
    assert "npu" not in tl.phases()


def test_unknown_phase_and_state_are_rejected(tl):
    with pytest.raises(KeyError, match="flow"):
        tl.set_phase_info("nope", state="done")
    with pytest.raises(ValueError, match="running"):
        tl.set_phase_info("flow", state="exploded")


def test_info_tooltip_and_reset(tl):
    tl.set_phase_info("flow", state="done", seconds=0.123, size_bytes=9318, dispatches=1)
    info = tl.phase_info("flow")
    assert (info.state, info.seconds, info.size_bytes, info.dispatches) == ("done", 0.123, 9318, 1)
    assert info.labels() == ("0.12 s", "1 disp")
    tip = tl.tooltip_text("flow")
    assert "flow: done" in tip and "9,318 bytes" in tip and "Dispatches: 1" in tip
    tl.set_phase_info("flow", dispatches=3)  # other fields untouched
    assert tl.phase_info("flow").seconds == 0.123
    tl.reset()
    assert tl.phase_info("flow").state == "pending" and tl.phase_info("flow").seconds is None


def test_widths_grow_with_log_time_and_keep_names_readable(tl):
    for p in tl.phases():
        tl.set_phase_info(p, state="done", seconds=0.01)
    tl.set_phase_info("executable-targets", seconds=30.0)
    tl.set_phase_info("flow", seconds=1.0)
    fm = tl.fontMetrics()
    w = {p: tl.segment_rect(p).width() for p in tl.phases()}
    assert w["executable-targets"] > w["flow"] > w["abi"]
    # log, not linear: 30x the time is far from 30x the width
    assert w["executable-targets"] < 4 * w["flow"]
    tl.resize(2400, 60)  # with room to spare, every name shows in full
    for p in tl.phases():
        assert tl.segment_rect(p).width() >= fm.horizontalAdvance(p)


def test_thirteen_phases_fit_a_laptop_screen(tl):
    tl.insert_phase("npu", after="flow")
    for p in tl.phases():
        tl.set_phase_info(p, state="done", seconds=0.5, size_bytes=123_456_789, dispatches=185)
    assert tl.minimumSizeHint().width() <= 1366


def test_each_state_is_drawn_differently(tl, qtbot):
    tl.set_phases(["a"])
    tl.resize(200, 60)
    images = []
    for state in STATES:
        tl.set_phase_info("a", state=state)
        tl.repaint()
        images.append(tl.grab().toImage())
    for i in range(len(images)):
        for j in range(i + 1, len(images)):
            assert images[i] != images[j], f"{STATES[i]} looks like {STATES[j]}"


def test_running_animates_only_while_running(tl, qtbot):
    tl.set_phase_info("flow", state="running")
    assert tl._anim.isActive()
    tl.set_phase_info("flow", state="done")
    assert not tl._anim.isActive()


def test_click_and_arrow_keys_select(tl, qtbot):
    assert tl.selected() is None
    rect = tl.segment_rect("flow")
    with qtbot.waitSignal(tl.sig_phase_selected) as blocker:
        qtbot.mouseClick(tl, QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == ["flow"] and tl.selected() == "flow"
    tl.setFocus()
    with qtbot.waitSignal(tl.sig_phase_selected) as blocker:
        qtbot.keyClick(tl, Key.Key_Right)
    assert blocker.args == ["stream"]
    qtbot.keyClick(tl, Key.Key_Left)
    qtbot.keyClick(tl, Key.Key_Left)
    assert tl.selected() == "dispatch-creation"
    qtbot.keyClick(tl, Key.Key_Home)
    qtbot.keyClick(tl, Key.Key_Left)  # stays at the first
    assert tl.selected() == SNAPSHOT_PHASES[0]
    with qtbot.assertNotEmitted(tl.sig_phase_selected):
        tl.select(SNAPSHOT_PHASES[0])


def test_focusable_and_accessible(tl):
    assert tl.focusPolicy() & QtCore.Qt.FocusPolicy.TabFocus
    assert tl.accessibleName() == "Phase timeline"
    tl.set_phase_info("vm", state="failed")
    tl.select("vm")
    assert "vm: failed" in tl.accessibleDescription()


def test_tooltip_event_shows_details(tl, qtbot):
    tl.set_phase_info("hal", state="edited", seconds=2.0)
    pos = tl.segment_rect("hal").center()
    event = QtGui.QHelpEvent(QtCore.QEvent.Type.ToolTip, pos, tl.mapToGlobal(pos))
    QtWidgets.QApplication.sendEvent(tl, event)
    qtbot.waitUntil(lambda: "hal: edited" in QtWidgets.QToolTip.text())


def test_every_phase_label_is_distinct_and_shown_whole_at_the_default_window_width(qtbot):
    w = PhaseTimeline()
    qtbot.addWidget(w)
    w.insert_phase("npu", after="flow")
    for i, phase in enumerate(w.phases()):
        w.set_phase_info(phase, state="done", seconds=0.01 * (i + 1), size_bytes=123_456, dispatches=12)
    w.resize(1400 - 8, 60)  # the main window's default width less its margins
    w.show()
    qtbot.waitExposed(w)
    labels = [phase_label(p) for p in w.phases()]
    assert len(w.phases()) == 13 and len(set(labels)) == 13
    bold = QtGui.QFont(w.font())
    bold.setBold(True)
    metrics = QtGui.QFontMetrics(bold)
    for phase, label in zip(w.phases(), labels):
        room = w.segment_rect(phase).width() - 2 * w.PAD
        assert metrics.horizontalAdvance("✓ " + label) <= room, phase
        assert w.tooltip_text(phase).startswith(f"{phase}: done")
