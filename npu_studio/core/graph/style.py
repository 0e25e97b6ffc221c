"""How a node looks under an overlay: its fill, outline and two text lines, and the legend.

One table for the view and the SVG export, so the exported picture is what the view shows.
Numeric overlays (cycles, SRAM, measured time, error) colour by a log scale over the
graph's own range, in five steps, each step's range in the legend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..units import format_bytes
from .compare import ADDED, CHANGED, REMOVED, SAME
from .dataflow import DISPATCH, INPUT, OUTPUT, PARAMETER
from .model import DataflowGraph, GraphNode
from .overlays import CYCLES, EDITS, ERROR, MEASURED, SRAM, UNIT, value_key

NONE = "none"
TERMINAL = {INPUT: "#d9e7f5", OUTPUT: "#d9f0dc", PARAMETER: "#f2efe6"}
PLAIN = "#ffffff"
NO_VALUE = "#e6e6e6"
UNITS = {"mac": "#4e79a7", "vector": "#76b7b2", "dma": "#b07aa1", "cpu": "#f28e2b"}
STEPS = ("#fff5cc", "#fed976", "#fd8d3c", "#e31a1c", "#800026")  # light to dark: small to large
TRACE = {"agrees": "#a1d99b", "unpaired": "#d9d9d9"}
EDIT = {"substituted": "#9467bd", "edited": "#ff7f0e"}
DIFF = {ADDED: "#2ca02c", REMOVED: "#d62728", CHANGED: "#ff9f1c", SAME: PLAIN}
OUTLINE, FIRST_DEPARTING, SELECTED = "#555555", "#d00000", "#1f5fd0"


@dataclass(frozen=True)
class Look:
    fill: str
    outline: str
    lines: tuple[str, ...]
    text: str = "#000000"  # text colour, white on dark fills
    thick: bool = False


def _dark(colour: str) -> bool:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


def _format(kind: str, value) -> str:
    if value is None:
        return ""
    if kind == SRAM:
        return format_bytes(int(value))
    if kind == CYCLES:
        return f"{int(value):,} cycles"
    if kind == MEASURED:
        return f"{value:.1f} µs"
    if kind == ERROR:
        return f"err {value:.2g}"
    return str(value)


class Styler:
    """The looks of one graph under one overlay (and, side by side, one comparison's statuses)."""

    def __init__(self, graph: DataflowGraph, overlay: str = NONE, status: dict[int, str] | None = None):
        self.graph, self.overlay, self.status = graph, overlay, status
        self.edges = self._edges()

    def _edges(self) -> list[float]:
        if self.overlay not in (CYCLES, SRAM, MEASURED, ERROR):
            return []
        key = value_key(self.overlay)
        values = [n.overlay[key] for n in self.graph.dispatches()
                  if isinstance(n.overlay.get(key), (int, float)) and n.overlay[key] > 0]
        if not values:
            return []
        lo, hi = math.log10(min(values)), math.log10(max(values))
        if hi - lo < 1e-9:
            return [10 ** lo] * (len(STEPS) - 1)
        return [10 ** (lo + (hi - lo) * i / len(STEPS)) for i in range(1, len(STEPS))]

    def _step(self, value: float) -> str:
        return STEPS[sum(1 for edge in self.edges if value > edge)]

    def look(self, node: GraphNode) -> Look:
        first = node.label if node.kind != DISPATCH else f"#{node.dispatch} {node.op_kind or 'dispatch'}"
        if node.kind != DISPATCH:
            shape = "x".join("?" if d is None else str(d) for d in node.outputs[0].shape) if node.outputs else ""
            if node.kind == PARAMETER:  # one line: its name is the tooltip's, a box this small shows the shape
                return Look(TERMINAL[node.kind], OUTLINE, (f"{shape} {node.outputs[0].dtype}"[:20],))
            kind = f"{shape} {node.outputs[0].dtype}" if node.outputs else ""
            return Look(TERMINAL[node.kind], OUTLINE, (first[:28], kind[:28]))
        fill, second, thick = PLAIN, (node.onnx_nodes[0] if node.onnx_nodes else node.symbol.split("::")[-1]), False
        o = node.overlay
        if self.status is not None:
            state = self.status.get(node.dispatch, SAME)
            fill, second = DIFF[state], (state if state != SAME else second)
        elif self.overlay == UNIT and "unit" in o:
            fill = UNITS.get(o["unit"], NO_VALUE)
            second = f"CPU: {o.get('fallback_rule') or 'fallback'}" if o["unit"] == "cpu" else o["unit"].upper()
        elif self.overlay == ERROR and "trace" in o:
            if o["trace"] == "departs":
                fill = self._step(o["max_rel_error"]) if o.get("max_rel_error") else STEPS[-1]
            else:
                fill = TRACE[o["trace"]]
            second = _format(ERROR, o.get("max_rel_error")) if o["trace"] != "unpaired" else "unpaired"
            thick = bool(o.get("first_departing"))
        elif self.overlay in (CYCLES, SRAM, MEASURED):
            value = o.get(value_key(self.overlay))
            fill = self._step(value) if isinstance(value, (int, float)) and value > 0 else NO_VALUE
            second = _format(self.overlay, value) or "no value"
        elif self.overlay == EDITS and "edit" in o:
            fill, second = EDIT[o["edit"]], o["edit"]
        elif self.overlay not in (NONE, "") and self.overlay in self.graph.overlays:
            fill = NO_VALUE
        return Look(fill, FIRST_DEPARTING if thick else OUTLINE, (first[:30], second[:30]),
                    "#ffffff" if _dark(fill) else "#000000", thick)

    def legend(self) -> list[tuple[str, str]]:
        """(colour, text) rows explaining the fills."""
        if self.status is not None:
            return [(DIFF[s], s) for s in (ADDED, REMOVED, CHANGED, SAME)]
        kind = self.overlay
        if kind == UNIT:
            return [(c, u.upper() if u != "cpu" else "CPU fallback (rule)") for u, c in UNITS.items()]
        if kind == EDITS:
            return [(c, t) for t, c in EDIT.items()] + [(PLAIN, "as compiled")]
        rows = []
        if kind in (CYCLES, SRAM, MEASURED, ERROR) and self.edges:
            bounds = ["" for _ in STEPS]
            lows = [None, *self.edges]
            for i, colour in enumerate(STEPS):
                lo = _format(kind, lows[i]) if lows[i] is not None else "smallest"
                hi = _format(kind, self.edges[i]) if i < len(self.edges) else "largest"
                bounds[i] = f"{lo} – {hi}"
                rows.append((colour, bounds[i]))
        if kind == ERROR:
            rows = [(TRACE["agrees"], "agrees with ONNX"), *[(c, "departs: " + t) for c, t in rows],
                    (TRACE["unpaired"], "no ONNX counterpart"), (FIRST_DEPARTING, "outline: first departing")]
        if kind in (CYCLES, SRAM, MEASURED, ERROR):
            rows.append((NO_VALUE, "no value"))
        return rows
