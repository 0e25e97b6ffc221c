"""The graph as DOT (for Graphviz and other tools) and as SVG (the view's picture, for a bug report).

The SVG draws the layout (layout.py) with the looks (style.py) the view uses: the same
boxes, edge polylines, fills, text and legend.
"""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

from .layout import Layout
from .model import DataflowGraph
from .style import OUTLINE, SELECTED, Styler

FONT_PX = 11
LEGEND_ROW = 16


def _dot_id(text: str) -> str:
    return json.dumps(text)  # a double-quoted DOT ID: quotes and backslashes escaped


def to_dot(graph: DataflowGraph, styler: Styler) -> str:
    lines = [f"digraph {_dot_id(f'{graph.build} {graph.phase}')} {{",
             "  rankdir=TB;", '  node [shape=box, style="rounded,filled", fontname="sans-serif", fontsize=10];']
    for n in graph.nodes:
        look = styler.look(n)
        label = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in look.lines if line)
        lines.append(f'  {_dot_id(n.id)} [label="{label}", fillcolor="{look.fill}", color="{look.outline}", '
                     f'fontcolor="{look.text}"{", penwidth=3" if look.thick else ""}];')
    for e in graph.edges:
        shape = "x".join("?" if d is None else str(d) for d in e.tensor.shape)
        lines.append(f"  {_dot_id(e.source)} -> {_dot_id(e.target)} [label={_dot_id(f'{shape} {e.tensor.dtype}')}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(graph: DataflowGraph, layout: Layout, styler: Styler, selected: str | None = None,
           margin: float = 20.0) -> str:
    legend = styler.legend()
    title = f"{graph.build} · {graph.phase}" + (
        f" · {graph.overlays[styler.overlay]['title']}" if styler.overlay in graph.overlays else "")
    x0, y0, x1, y1 = layout.bounds()
    top = margin + LEGEND_ROW * (len(legend) + 1) + 10
    dx, dy = margin - x0, top - y0
    width, height = x1 - x0 + 2 * margin, y1 - y0 + top + margin
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="{FONT_PX}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#777777"/></marker></defs>',
           '<rect width="100%" height="100%" fill="#ffffff"/>',
           f'<text x="{margin}" y="{margin + 4}" font-weight="bold">{escape(title)}</text>']
    for i, (colour, text) in enumerate(legend):
        y = margin + LEGEND_ROW * (i + 1)
        out.append(f'<rect x="{margin}" y="{y - 1}" width="12" height="12" fill="{colour}" stroke="{OUTLINE}"/>'
                   f'<text x="{margin + 18}" y="{y + 9}">{escape(text)}</text>')
    out.append('<g fill="none" stroke="#777777" stroke-width="1">')
    for (s, t), pts in layout.routes.items():
        d = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" marker-end="url(#arrow)"/>')
    out.append("</g>")
    drawn = [(n, layout.boxes.get(n.id), n.id) for n in graph.nodes]
    drawn += [(graph.node(pid), box, None) for pid, box in layout.ghosts]  # a parameter beside another reader
    for n, box, group in drawn:
        if n is None or box is None:
            continue
        look = styler.look(n)
        x, y, w, h = box
        stroke = SELECTED if n.id == selected else look.outline
        sw = 3 if n.id == selected or look.thick else 1
        head = f"id={_attr(group)}" if group else 'class="ghost"'
        out.append(f'<g {head}><title>{escape(n.id)}</title>'
                   f'<rect x="{x - w / 2 + dx:.1f}" y="{y - h / 2 + dy:.1f}" width="{w:.1f}" height="{h:.1f}" '
                   f'rx="5" fill="{look.fill}" stroke="{stroke}" stroke-width="{sw}"/>')
        lines = [line for line in look.lines if line]
        for i, line in enumerate(lines):
            ty = y + dy + (i - (len(lines) - 1) / 2) * (FONT_PX + 2) + FONT_PX / 3
            out.append(f'<text x="{x + dx:.1f}" y="{ty:.1f}" text-anchor="middle" fill="{look.text}">'
                       f'{escape(line)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _attr(text: str) -> str:
    return '"' + escape(text, {'"': "&quot;"}) + '"'
