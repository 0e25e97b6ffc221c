"""The graph's scene items: a node box (drawn from core/graph/style's look), every edge as one path, and
the panel a dispatch expands into (the ONNX nodes it fused)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.graph.model import GraphNode
from ...core.graph.style import SELECTED, Look

DETAIL_LOD = 0.35  # below this zoom the text is not drawn (unreadable, and costly at 2,000 nodes)
ONNX_ROW = 22.0


class NodeItem(QtWidgets.QGraphicsItem):
    """A node's box, centred on its layout position; `look` says its fill, outline and text."""

    def __init__(self, node: GraphNode, box: tuple[float, float, float, float], look: Look):
        super().__init__()
        x, y, w, h = box
        self.node, self.look, self.selected = node, look, False
        self.setPos(x, y)
        self._rect = QtCore.QRectF(-w / 2, -h / 2, w, h)
        self.setToolTip(_tooltip(node))
        self.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)
        self.expanded: OnnxPanel | None = None

    def boundingRect(self) -> QtCore.QRectF:
        return self._rect.adjusted(-2, -2, 2, 2)

    def set_look(self, look: Look) -> None:
        self.look = look
        self.update()

    def set_selected(self, on: bool) -> None:
        if on != self.selected:
            self.selected = on
            self.setZValue(2 if on else 0)
            self.update()

    def paint(self, painter: QtGui.QPainter, option, widget=None) -> None:
        look = self.look
        thick = 3 if self.selected or look.thick else 1
        painter.setPen(QtGui.QPen(QtGui.QColor(SELECTED if self.selected else look.outline), thick))
        painter.setBrush(QtGui.QColor(look.fill))
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if lod < DETAIL_LOD:  # an overview: plain boxes, no text (thousands per frame)
            painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
            painter.drawRect(self._rect)
            return
        painter.drawRoundedRect(self._rect, 5, 5)
        painter.setPen(QtGui.QColor(look.text))
        lines = [line for line in look.lines if line]
        flags = QtCore.Qt.AlignmentFlag.AlignCenter | QtCore.Qt.TextFlag.TextDontClip  # half a 28 px box cut "_"
        if len(lines) == 1:
            painter.drawText(self._rect, flags, lines[0])
            return
        top, bottom = QtCore.QRectF(self._rect), QtCore.QRectF(self._rect)
        top.setBottom(self._rect.center().y())
        bottom.setTop(self._rect.center().y())
        painter.drawText(top.adjusted(2, 2, -2, 0), flags, lines[0])
        painter.drawText(bottom.adjusted(2, 0, -2, -2), flags, lines[1])


class OnnxPanel(QtWidgets.QGraphicsRectItem):
    """What an expanded dispatch holds: its ONNX nodes in order, in a column beside it (the root first)."""

    def __init__(self, node_item: NodeItem):
        names = node_item.node.onnx_nodes or ["(no ONNX node named)"]
        w = max(140.0, 7.0 * max(len(n) for n in names) + 16)
        h = ONNX_ROW * len(names) + 8
        super().__init__(0, 0, w, h, node_item)
        r = node_item.boundingRect()
        self.setPos(r.right() + 8, r.top())
        self.setBrush(QtGui.QColor("#fbfbf4"))
        self.setPen(QtGui.QPen(QtGui.QColor("#8a8a6a"), 1, QtCore.Qt.PenStyle.DashLine))
        self.setZValue(5)
        for i, name in enumerate(names):
            box = QtWidgets.QGraphicsRectItem(4, 4 + i * ONNX_ROW, w - 8, ONNX_ROW - 4, self)
            box.setBrush(QtGui.QColor("#ffffff"))
            text = QtWidgets.QGraphicsSimpleTextItem(("▶ " if i == 0 else "  ") + name, box)
            text.setPos(8, 5 + i * ONNX_ROW)
        self.setToolTip(f"ONNX nodes fused into dispatch #{node_item.node.dispatch}")


def edges_path(routes) -> QtGui.QPainterPath:
    """Every edge polyline and its arrowhead in one path: one item to draw, whatever the edge count."""
    path = QtGui.QPainterPath()
    for pts in routes:
        if len(pts) < 2:
            continue
        path.moveTo(*pts[0])
        for p in pts[1:]:
            path.lineTo(*p)
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        d = QtCore.QLineF(x0, y0, x1, y1)
        if d.length() > 0:
            u = d.unitVector()
            dx, dy = u.dx() * 7, u.dy() * 7
            path.moveTo(x1 - dx - dy * 0.5, y1 - dy + dx * 0.5)
            path.lineTo(x1, y1)
            path.lineTo(x1 - dx + dy * 0.5, y1 - dy - dx * 0.5)
    return path


def _tooltip(node: GraphNode) -> str:
    lines = [node.label if node.dispatch is None else f"Dispatch #{node.dispatch}: {node.op_kind}", node.symbol]
    for t in node.outputs[:4]:
        lines.append(f"{t.name}: {'x'.join('?' if d is None else str(d) for d in t.shape)} {t.dtype}")
    if node.onnx_nodes:
        more = f" (+{len(node.onnx_nodes) - 6})" if len(node.onnx_nodes) > 6 else ""
        lines.append("ONNX: " + ", ".join(node.onnx_nodes[:6]) + more)
    for k, v in node.overlay.items():
        lines.append(f"{k}: {v}")
    return "\n".join(line for line in lines if line)
