"""PhaseTimeline: one painted segment per compiler phase, in pipeline order.

Each segment shows the phase name, its wall time, the size of its IR snapshot
and its dispatch count, and is drawn by state (pending, running, done,
failed, edited, stale). Widths blend a readable minimum with log(time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

from npu_studio.core.compile.phases import SNAPSHOT_PHASES

from ..core.units import format_bytes

STATES = ("pending", "running", "done", "failed", "edited", "stale")
_FILL = {
    "pending": "#f2f2f2",
    "running": "#cfe3ff",
    "done": "#d6f0d6",
    "failed": "#f8c9c9",
    "edited": "#ffe4b3",
    "stale": "#e6e6e6",
}
_BORDER = {
    "pending": "#b5b5b5",
    "running": "#2f7de1",
    "done": "#4c9a4c",
    "failed": "#c62828",
    "edited": "#d08a00",
    "stale": "#8c8c8c",
}
BADGE_COLOR, BADGE_ALERT = "#6a4fb3", "#c62828"  # a substitution's mark; red: its check failed
_MARK = {"failed": "✗ ", "edited": "✎ ", "stale": "↻ ", "done": "✓ ", "running": "▶ "}

# Short, distinct names that fit a segment whole (the tooltip has the full phase name):
# the three executable-* phases used to elide to the same "executabl…".
PHASE_LABELS = {
    "input": "input",
    "abi": "ABI",
    "preprocessing": "preproc",
    "global-optimization": "global opt",
    "dispatch-creation": "dispatches",
    "flow": "flow",
    "stream": "stream",
    "executable-sources": "exe sources",
    "executable-configurations": "exe configs",
    "executable-targets": "exe targets",
    "hal": "HAL",
    "vm": "VM",
    "npu": "NPU",
}


def phase_label(phase: str) -> str:
    return PHASE_LABELS.get(phase, phase)


def format_seconds(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 100:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s"


def format_size(size: int) -> str:
    return format_bytes(size)


@dataclass
class PhaseInfo:
    state: str = "pending"
    seconds: float | None = None
    size_bytes: int | None = None
    dispatches: int | None = None
    details: str = ""  # further lines for the tooltip (op counts by dialect, ...)

    def labels(self) -> tuple[str, str]:
        """The lines under the name: time and dispatch count (one each, to stay narrow; two, so the
        strip leaves the IR its lines at 1280x800). The IR size is in the tooltip."""
        return (
            format_seconds(self.seconds) if self.seconds is not None else "",
            f"{self.dispatches} disp" if self.dispatches is not None else "",
        )


class PhaseTimeline(QtWidgets.QWidget):
    """Horizontal strip of phase segments; click or Left/Right to select."""

    sig_phase_selected = QtCore.Signal(str)  # phase

    PAD = 8  # horizontal padding inside a segment
    GAP = 3  # between segments

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setAccessibleName("Phase timeline")
        self._phases: list[str] = []
        self._info: dict[str, PhaseInfo] = {}
        self._notes: dict[str, str] = {}  # set_phase_note
        self._badges: dict[str, tuple[str, str, bool]] = {}  # set_phase_badge: text, tooltip, alert
        self._selected: str | None = None
        self._rects: list[QtCore.QRectF] | None = None
        self._anim_step = 0
        self._anim = QtCore.QTimer(self)
        self._anim.setInterval(80)
        self._anim.timeout.connect(self._on_anim)
        self.set_phases(list(SNAPSHOT_PHASES))

    # -- public API -------------------------------------------------------

    def set_phases(self, phases: list[str]) -> None:
        """Replace the phase list (e.g. SNAPSHOT_PHASES plus "npu" after
        "flow"); phases kept keep their info."""
        if len(set(phases)) != len(phases):
            raise ValueError(f"duplicate phase in {phases}")
        self._info = {p: self._info.get(p, PhaseInfo()) for p in phases}
        self._phases = list(phases)
        if self._selected not in self._info:
            self._selected = None
        self._changed()

    def phases(self) -> list[str]:
        return list(self._phases)

    def insert_phase(self, phase: str, after: str) -> None:
        """Insert `phase` right after `after`."""
        i = self._index(after)
        self.set_phases(self._phases[: i + 1] + [phase] + self._phases[i + 1 :])

    def set_phase_info(
        self,
        phase: str,
        *,
        state: str | None = None,
        seconds: float | None = None,
        size_bytes: int | None = None,
        dispatches: int | None = None,
        details: str | None = None,
    ) -> None:
        """Update what is known about `phase`; None leaves a field as is."""
        self._index(phase)
        info = self._info[phase]
        if state is not None:
            if state not in STATES:
                raise ValueError(f"unknown state {state!r}; expected one of: {', '.join(STATES)}")
            info.state = state
        if seconds is not None:
            info.seconds = float(seconds)
        if size_bytes is not None:
            info.size_bytes = int(size_bytes)
        if dispatches is not None:
            info.dispatches = int(dispatches)
        if details is not None:
            info.details = details
        self._changed()

    def set_phase_note(self, phase: str, note: str) -> None:
        """A line of another view's for `phase`'s tooltip (the compile profile's top pass); "" removes it."""
        self._index(phase)
        self._notes[phase] = note

    def set_phase_badge(self, phase: str, text: str, tooltip: str = "", alert: bool = False) -> None:
        """A small mark on `phase`'s card (a substituted executable: "⇄ 1"), red when `alert`;
        its tooltip lines join the card's. "" removes it."""
        self._index(phase)
        if text:
            self._badges[phase] = (text, tooltip, alert)
        else:
            self._badges.pop(phase, None)
        self._changed()

    def phase_badge(self, phase: str) -> tuple[str, str, bool] | None:
        return self._badges.get(phase)

    def phase_info(self, phase: str) -> PhaseInfo:
        self._index(phase)
        info = self._info[phase]
        return PhaseInfo(info.state, info.seconds, info.size_bytes, info.dispatches)

    def reset(self) -> None:
        """Every phase back to pending with nothing known; selection kept."""
        self._info = {p: PhaseInfo() for p in self._phases}
        self._changed()

    def select(self, phase: str | None) -> None:
        """Select `phase` (None: nothing); emits sig_phase_selected on change."""
        if phase is not None:
            self._index(phase)
        if phase == self._selected:
            return
        self._selected = phase
        self._update_accessible()
        self.update()
        if phase is not None:
            self.sig_phase_selected.emit(phase)

    def selected(self) -> str | None:
        return self._selected

    def segment_rect(self, phase: str) -> QtCore.QRect:
        return self._layout()[self._index(phase)].toAlignedRect()

    def tooltip_text(self, phase: str) -> str:
        info = self._info[phase]
        lines = [f"{phase}: {info.state}"]
        if info.seconds is not None:
            lines.append(f"Wall time: {info.seconds:.3f} s")
        if info.size_bytes is not None:
            lines.append(f"IR size: {info.size_bytes:,} bytes ({format_size(info.size_bytes)})")
        if info.dispatches is not None:
            lines.append(f"Dispatches: {info.dispatches}")
        if info.details:
            lines.append(info.details)
        if self._notes.get(phase):
            lines.append(self._notes[phase])
        if phase in self._badges and self._badges[phase][1]:
            lines.append(self._badges[phase][1])
        return "\n".join(lines)

    # -- geometry ---------------------------------------------------------

    def _index(self, phase: str) -> int:
        try:
            return self._phases.index(phase)
        except ValueError:
            raise KeyError(
                f"unknown phase {phase!r}; expected one of: {', '.join(self._phases)}"
            ) from None

    def _min_width(self, phase: str) -> float:
        fm, bold = self.fontMetrics(), self._bold_metrics()
        info = self._info[phase]
        texts = info.labels()
        name = _MARK.get(info.state, "") + phase_label(phase)
        badge = self._badges.get(phase)
        name_width = bold.horizontalAdvance(name) + (self._badge_width(badge[0]) + 4 if badge else 0)
        widths = [name_width] + [fm.horizontalAdvance(t) for t in texts]
        return max(widths) + 2 * self.PAD + 4  # slack: a mark drawn from a fallback font may be wider

    def _badge_width(self, text: str) -> int:
        return self.fontMetrics().horizontalAdvance(text) + 8

    def _paint_badge(self, p: QtGui.QPainter, inner: QtCore.QRectF, phase: str) -> float:
        """The badge at the top right of the card; returns the width it takes."""
        text, _, alert = self._badges[phase]
        width = self._badge_width(text)
        box = QtCore.QRectF(inner.right() - width, inner.top(), width, self.fontMetrics().height())
        p.save()
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(QtGui.QColor(BADGE_ALERT if alert else BADGE_COLOR))
        p.drawRoundedRect(box, 3, 3)
        p.setPen(QtGui.QColor("white"))
        p.drawText(box, QtCore.Qt.AlignmentFlag.AlignCenter, text)
        p.restore()
        return width + 4

    def _bold_metrics(self) -> QtGui.QFontMetrics:
        font = QtGui.QFont(self.font())
        font.setBold(True)
        return QtGui.QFontMetrics(font)

    def _layout(self) -> list[QtCore.QRectF]:
        if self._rects is not None:
            return self._rects
        mins = [self._min_width(p) for p in self._phases]
        # log(time) weights: 10 ms -> ~0, 1 s -> ~4.6, 100 s -> ~9.2.
        weights = [
            math.log1p((self._info[p].seconds or 0.0) * 100.0) for p in self._phases
        ]
        free = self.width() - sum(mins) - self.GAP * max(0, len(mins) - 1)
        total = sum(weights)
        x, rects = 0.0, []
        for m, w in zip(mins, weights):
            width = m
            if free > 0:
                # Half the free space goes by log(time), half evenly.
                share = (0.5 * w / total if total else 0.0) + (0.5 if total else 1.0) / len(mins)
                width += free * share
            rects.append(QtCore.QRectF(x, 1, width, self.height() - 2))
            x += width + self.GAP
        self._rects = rects
        return rects

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802
        width = sum(self._min_width(p) for p in self._phases)
        width += self.GAP * max(0, len(self._phases) - 1)
        return QtCore.QSize(int(width) + 1, self.fontMetrics().height() * (1 + len(PhaseInfo().labels())) + 12)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802
        return self.minimumSizeHint()

    def phase_at(self, pos: QtCore.QPointF) -> str | None:
        for phase, rect in zip(self._phases, self._layout()):
            if rect.left() <= pos.x() <= rect.right() + self.GAP:
                return phase
        return None

    # -- painting ---------------------------------------------------------

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        fm, bold = self.fontMetrics(), self._bold_metrics()
        bold_font = QtGui.QFont(self.font())
        bold_font.setBold(True)
        text_color = self.palette().color(QtGui.QPalette.ColorRole.WindowText)
        for phase, rect in zip(self._phases, self._layout()):
            info = self._info[phase]
            selected = phase == self._selected
            self._paint_segment(p, rect, info.state, selected)
            p.setPen(QtGui.QColor("#202020") if info.state != "pending" else text_color)
            inner = rect.adjusted(self.PAD, 4, -self.PAD, -4)
            badge = self._paint_badge(p, inner, phase) if phase in self._badges else 0.0
            p.setFont(bold_font)
            name = bold.elidedText(
                _MARK.get(info.state, "") + phase_label(phase), QtCore.Qt.TextElideMode.ElideRight,
                int(inner.width() - badge),
            )
            p.drawText(inner, QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop, name)
            p.setFont(self.font())
            y = inner.top() + bold.height()
            for line in info.labels():
                if line:
                    p.drawText(QtCore.QRectF(inner.left(), y, inner.width(), fm.height()),
                               QtCore.Qt.AlignmentFlag.AlignLeft, line)
                y += fm.height()
        p.end()

    def _paint_segment(self, p: QtGui.QPainter, rect: QtCore.QRectF, state: str, selected: bool) -> None:
        fill = QtGui.QColor(_FILL[state])
        border = QtGui.QColor(_BORDER[state])
        path = QtGui.QPainterPath()
        path.addRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
        p.fillPath(path, fill)
        if state == "stale":
            p.fillPath(path, QtGui.QBrush(QtGui.QColor("#b0b0b0"), QtCore.Qt.BrushStyle.BDiagPattern))
        elif state == "running":
            # A light band sweeping left to right.
            band = rect.width() / 3
            x = rect.left() - band + (self._anim_step % 24) / 24 * (rect.width() + band)
            grad = QtGui.QLinearGradient(x, 0, x + band, 0)
            grad.setColorAt(0.0, QtGui.QColor(255, 255, 255, 0))
            grad.setColorAt(0.5, QtGui.QColor(255, 255, 255, 170))
            grad.setColorAt(1.0, QtGui.QColor(255, 255, 255, 0))
            p.save()
            p.setClipPath(path)
            p.fillRect(QtCore.QRectF(x, rect.top(), band, rect.height()), grad)
            p.restore()
        pen = QtGui.QPen(border, 1.0)
        if state == "pending":
            pen.setStyle(QtCore.Qt.PenStyle.DashLine)
        if selected:
            pen = QtGui.QPen(self.palette().color(QtGui.QPalette.ColorRole.Highlight), 3.0)
        p.setPen(pen)
        p.drawPath(path)
        if selected and self.hasFocus():
            focus = QtGui.QPen(self.palette().color(QtGui.QPalette.ColorRole.Text), 1.0,
                               QtCore.Qt.PenStyle.DotLine)
            p.setPen(focus)
            p.drawRoundedRect(rect.adjusted(4, 4, -4, -4), 3, 3)
        p.setBrush(QtCore.Qt.BrushStyle.NoBrush)

    # -- events -----------------------------------------------------------

    def _changed(self) -> None:
        self._rects = None
        running = any(i.state == "running" for i in self._info.values())
        if running and not self._anim.isActive():
            self._anim.start()
        elif not running:
            self._anim.stop()
        self._update_accessible()
        self.updateGeometry()
        self.update()

    def _on_anim(self) -> None:
        self._anim_step += 1
        for phase, rect in zip(self._phases, self._layout()):
            if self._info[phase].state == "running":
                self.update(rect.toAlignedRect())

    def _update_accessible(self) -> None:
        if self._selected is None:
            self.setAccessibleDescription(f"{len(self._phases)} phases, none selected")
        else:
            desc = self.tooltip_text(self._selected).replace("\n", ", ")
            self.setAccessibleDescription(f"Selected phase {desc}")

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802
        self._rects = None
        super().resizeEvent(event)

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802
        if event.button() == QtCore.Qt.MouseButton.LeftButton:
            phase = self.phase_at(event.position())
            if phase is not None:
                self.select(phase)
        super().mousePressEvent(event)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        Key = QtCore.Qt.Key
        if key in (Key.Key_Left, Key.Key_Right, Key.Key_Home, Key.Key_End) and self._phases:
            if self._selected is None:
                i = 0 if key in (Key.Key_Right, Key.Key_Home) else len(self._phases) - 1
            else:
                i = self._phases.index(self._selected)
                i = {Key.Key_Left: i - 1, Key.Key_Right: i + 1,
                     Key.Key_Home: 0, Key.Key_End: len(self._phases) - 1}[key]
            self.select(self._phases[max(0, min(i, len(self._phases) - 1))])
            event.accept()
            return
        super().keyPressEvent(event)

    def event(self, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.ToolTip:
            phase = self.phase_at(QtCore.QPointF(event.pos()))
            if phase is None:
                QtWidgets.QToolTip.hideText()
            else:
                QtWidgets.QToolTip.showText(event.globalPos(), self.tooltip_text(phase), self)
            return True
        return super().event(event)

    def focusInEvent(self, event: QtGui.QFocusEvent) -> None:  # noqa: N802
        super().focusInEvent(event)
        self.update()

    def focusOutEvent(self, event: QtGui.QFocusEvent) -> None:  # noqa: N802
        super().focusOutEvent(event)
        self.update()
