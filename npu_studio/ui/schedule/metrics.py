"""The schedule chart's row pitch and plot heights (no pyqtgraph: the dock sizes itself before the chart exists)."""

from __future__ import annotations

ROW_PX = 16  # engine row pitch: labels of about 12 px never overlap
SRAM_PX, ADDRESS_PX, TIME_AXIS_PX = 52, 60, 40  # the two SRAM plots, the time axis under them
DEFAULT_ENGINES = 7  # dma0..dma3, mac, vector, cpu


def engines_height(engines: int) -> int:
    return max(engines, 1) * ROW_PX + 8


def chart_min_height(engines: int = DEFAULT_ENGINES) -> int:
    """The chart's minimum height: every engine row at ROW_PX, both SRAM plots, the time axis."""
    return engines_height(engines) + SRAM_PX + ADDRESS_PX + TIME_AXIS_PX + 12
