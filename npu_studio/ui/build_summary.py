"""The build says what it contains: a strip under the timeline, badges on the timeline, marks in the table.

All of it comes from `Session.build_summary()` (core/build_summary.py); this only draws it:
- the strip: a line for the build (edited phases, uncompiled edits, substitutions and their
  verdicts), one for the NPU target (and the keys that differ from the bundled one it came from);
  each elided to the width, the whole text in the tooltip;
- a `⇄ N` badge on the cards of the phases that contain substituted executables (red when a
  check failed), naming them in the card's tooltip;
- `#N ⇄` in the dispatch table for a dispatch whose executable is substituted.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from ..core.build_summary import BuildSummary
from ..core.compile.phases import SNAPSHOT_PHASES
from ..core.session import Session
from .banner import OneLineBanner
from .dispatches.table import SUBSTITUTED, DispatchTable
from .timeline import BADGE_ALERT, PhaseTimeline

_FAILING = f"color:{BADGE_ALERT};font-weight:bold"


class _Line(OneLineBanner):
    """A line of the strip: no more height than its text."""

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802
        return QtCore.QSize(200, self.fontMetrics().height() + 2)


class BuildSummaryStrip(QtWidgets.QWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Build summary")
        self.build_label = _Line()
        self.build_label.setAccessibleName("What the build contains")
        self.target_label = _Line()
        self.target_label.setAccessibleName("NPU target of the build")
        # One line for both, side by side (each elides, its tooltip whole): the IR keeps the height.
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(2, 0, 2, 0)
        layout.setSpacing(12)
        layout.addWidget(self.build_label, 1)
        layout.addWidget(self.target_label, 1)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)

    def show_summary(self, summary: BuildSummary) -> None:
        self.build_label.set_message(summary.build_text())
        self.build_label.setToolTip(summary.tooltip())
        self.build_label.setStyleSheet(_FAILING if summary.has_failing_substitution else "")
        target = summary.target
        self.target_label.set_message(target.text() if target is not None else "")
        if target is not None:
            self.target_label.setToolTip(f"{target.text(max_keys=None)}\n{target.path}")

    def texts(self) -> tuple[str, str]:
        """The whole (unelided) texts of the two lines."""
        return self.build_label.full_text(), self.target_label.full_text()


class BuildSummaryBinding:
    """Redraws the strip, the badges and the table's marks when the session changes (once per event loop turn)."""

    def __init__(self, session: Session, strip: BuildSummaryStrip, timeline: PhaseTimeline, table: DispatchTable):
        self.session, self.strip, self.timeline, self.table = session, strip, timeline, table
        self._timer = QtCore.QTimer(strip, singleShot=True, interval=0)
        self._timer.timeout.connect(self.refresh)
        e = session.events
        for event in (e.workspace, e.phases, e.indexes, e.npu, e.target, e.problems):
            event.connect(self._timer.start)
        self.refresh()

    def refresh(self) -> None:
        summary = self.session.build_summary()
        self.strip.show_summary(summary)
        phases = summary.phase_marks()
        for phase in SNAPSHOT_PHASES:
            marks = phases.get(phase, [])
            self.timeline.set_phase_badge(
                phase, f"{SUBSTITUTED} {len(marks)}" if marks else "",
                "Substituted: " + ", ".join(m.text for m in marks), any(m.failed for m in marks))
        self.table.set_marks({d: ("Substituted executable: " + ", ".join(m.text for m in marks),
                                  any(m.failed for m in marks))
                              for d, marks in summary.dispatch_marks(self.session.indexes).items()})


def install_build_summary(window) -> None:
    """Sets `window.build_summary` (the strip, placed under the timeline) and its binding."""
    window.build_summary = BuildSummaryStrip()
    layout = window.timeline_scroller.parentWidget().layout()
    layout.insertWidget(layout.indexOf(window.timeline_scroller) + 1, window.build_summary)
    window.build_summary_binding = BuildSummaryBinding(window.session, window.build_summary, window.timeline,
                                                       window.dispatch_table)
