"""The one look of every plot: a light ground and dark ink (the schedule's Gantt, the numerics
plot, the sweep's Pareto and sensitivity plots, histograms), and axis numbers in engineering
units (`200k`, `1.2M`, `500 µs`), never `1e+06`.

Every pyqtgraph widget of the app is made here (`plot_widget`, `layout_widget`); pyqtgraph
is imported by the caller's first plot, not at the app's start.
"""

from __future__ import annotations

import math

import pyqtgraph as pg

BACKGROUND = "#ffffff"
FOREGROUND = "#303030"  # axes, tick labels, titles
GRID_ALPHA = 0.25
PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
            (1e-9, "n"), (1e-12, "p"))


def use_light_theme() -> None:
    """pyqtgraph's defaults for what is drawn without an explicit colour (titles, labels)."""
    pg.setConfigOptions(background=BACKGROUND, foreground=FOREGROUND)


def engineering(value: float, unit: str = "", spacing: float | None = None) -> str:
    """`value` with an SI prefix: `0`, `950`, `200k`, `1.2M`; with a unit, `500 µs`, `1.5 ms`.
    Without a unit, values under 1 stay plain decimals (`0.25`): `250m` reads as metres.
    Decimals: as few as show the value exactly at the ticks' `spacing`, else three significant digits."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = abs(value)
    if not unit and magnitude < 1.0:
        return f"{value:.3g}".replace("e-0", "e-")  # 0.25, 1e-6
    smallest = PREFIXES[-1] if unit else PREFIXES[4]
    factor, prefix = next((p for p in PREFIXES if magnitude >= p[0] * 0.9995), smallest)
    x = value / factor
    tolerance = spacing / factor * 1e-3 if spacing else abs(x) * 5e-3
    places = next(p for p in range(4) if abs(round(x, p) - x) <= tolerance or p == 3)
    text = f"{x:.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {prefix}{unit}" if unit else f"{text}{prefix}"


class EngineeringAxis(pg.AxisItem):
    """An axis whose tick labels are `engineering(...)`: values times the axis's scale, in `unit`.
    In log mode the ticks are at powers of ten and labelled with the value they stand for."""

    def __init__(self, orientation: str, unit: str = "", min_step: float = 0.0, **kwargs):
        """`min_step`: no ticks closer than this (1 for an axis of indexes: no tick at dispatch 0.5)."""
        super().__init__(orientation, **kwargs)
        self.unit, self.min_step = unit, min_step
        self.enableAutoSIPrefix(False)  # the prefix is in each label, never `(x0.001)` in the title

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802 - pyqtgraph's name
        levels = super().tickSpacing(minVal, maxVal, size)
        if not self.min_step or self.logMode:
            return levels
        return [(s, o) for s, o in levels if s >= self.min_step] or [(self.min_step, 0)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        if self.logMode:
            return [engineering(10.0 ** v * scale, self.unit) for v in values]
        return [engineering(v * scale, self.unit, spacing * scale) for v in values]


def _paint(widget) -> None:
    widget.setBackground(BACKGROUND)


def engineering_axes(unit_left: str = "", unit_bottom: str = "") -> dict:
    return {"left": EngineeringAxis("left", unit_left), "bottom": EngineeringAxis("bottom", unit_bottom)}


def plot_widget(parent=None, axis_items: dict | None = None, **kwargs) -> pg.PlotWidget:
    """A PlotWidget in the theme, with engineering axes unless `axis_items` names others."""
    use_light_theme()
    axes = engineering_axes()
    axes.update(axis_items or {})
    widget = pg.PlotWidget(parent, axisItems=axes, **kwargs)
    _paint(widget)
    return widget


def layout_widget(parent=None) -> pg.GraphicsLayoutWidget:
    """A GraphicsLayoutWidget (several linked plots) in the theme."""
    use_light_theme()
    widget = pg.GraphicsLayoutWidget(parent)
    _paint(widget)
    return widget
