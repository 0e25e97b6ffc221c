"""The schedule chart's "measured" rows: measured cycles drawn apart from the simulated bars.

A measured bar is hatched in its dispatch's colour, faded, and edged in it, so it reads as the
same dispatch yet never as a simulated step (solid).
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui

from ...core.npu.report.schedule_model import ScheduleModel
from .span_rects import SpanRects
from .summary import PALETTE, dispatch_color

MEASURED_HALF = 0.35  # of a row: as tall as a simulated bar, so their lengths compare at a glance
HATCH = QtCore.Qt.BrushStyle.BDiagPattern
FADED = 150  # of 255: a thin bar (no room for the hatch) still reads lighter than a simulated one


def measured_color(dispatch: int) -> str:
    color = QtGui.QColor(dispatch_color(dispatch))
    color.setAlpha(FADED)
    return color.name(QtGui.QColor.NameFormat.HexArgb)


def measured_rects(model: ScheduleModel, meas_row: np.ndarray) -> SpanRects | None:
    """The measured bars of `model` on the rows `meas_row` gives each engine (None: no measurements)."""
    m = model.measured
    if m is None or not len(m.engine):
        return None
    rows = meas_row[m.engine].astype(float)
    ci = m.dispatch % len(PALETTE)
    item = SpanRects(m.start, m.end, rows - MEASURED_HALF, rows + MEASURED_HALF, ci,
                     [measured_color(i) for i in range(len(PALETTE))], group=meas_row[m.engine] * len(PALETTE) + ci,
                     pattern=HATCH)
    item.setZValue(1)
    return item
