"""GraphCanvas: one laid-out graph in a QGraphicsView: zoom with the wheel, pan by dragging, click a
dispatch to select it, double-click to expand it into its ONNX nodes (and back)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.graph.layout import Layout
from ...core.graph.model import DataflowGraph
from ...core.graph.style import Styler
from .items import NodeItem, OnnxPanel, edges_path

ZOOM_STEP = 1.15
MIN_SCALE, MAX_SCALE = 0.02, 4.0


class GraphCanvas(QtWidgets.QGraphicsView):
    sig_dispatch_clicked = QtCore.Signal(int)  # dispatch index

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setScene(QtWidgets.QGraphicsScene(self))
        self.setRenderHints(QtGui.QPainter.RenderHint.Antialiasing | QtGui.QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QtWidgets.QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QtWidgets.QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QtWidgets.QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setBackgroundBrush(QtGui.QColor("#ffffff"))
        self.graph: DataflowGraph | None = None
        self.items: dict[str, NodeItem] = {}
        self.ghosts: list[NodeItem] = []  # parameters drawn again beside their other readers
        self.selected: NodeItem | None = None
        self._press: QtCore.QPoint | None = None

    def show_graph(self, graph: DataflowGraph | None, layout: Layout | None, styler: Styler | None) -> None:
        scene = self.scene()
        scene.clear()
        self.items, self.ghosts, self.selected, self.graph = {}, [], None, graph
        if graph is None or layout is None:
            return
        pen = QtGui.QPen(QtGui.QColor("#8a8a8a"), 1)
        pen.setCosmetic(True)
        for route in layout.routes.values():  # one item per edge: only those in view are drawn
            edge = scene.addPath(edges_path([route]), pen)
            edge.setZValue(-1)
        for node in graph.nodes:
            box = layout.boxes.get(node.id)
            if box is not None:
                item = NodeItem(node, box, styler.look(node))
                scene.addItem(item)
                self.items[node.id] = item
        for node_id, box in layout.ghosts:
            node = graph.node(node_id)
            if node is not None:
                item = NodeItem(node, box, styler.look(node))
                scene.addItem(item)
                self.ghosts.append(item)
        x0, y0, x1, y1 = layout.bounds()
        scene.setSceneRect(QtCore.QRectF(x0 - 200, y0 - 60, x1 - x0 + 600, y1 - y0 + 120))
        self.resetTransform()
        self.centerOn(self.items[graph.nodes[0].id] if graph.nodes else QtCore.QPointF(0, 0))

    def restyle(self, styler: Styler) -> None:
        for item in [*self.items.values(), *self.ghosts]:
            item.set_look(styler.look(item.node))

    def dispatch_item(self, index: int | None) -> NodeItem | None:
        return self.items.get(f"dispatch:{index}") if index is not None else None

    def highlight(self, index: int | None, centre: bool = True) -> None:
        item = self.dispatch_item(index)
        if self.selected is not None and self.selected is not item:
            self.selected.set_selected(False)
        self.selected = item
        if item is not None:
            item.set_selected(True)
            if centre:
                self.centerOn(item)

    def toggle_expanded(self, item: NodeItem) -> None:
        if item.expanded is not None:
            self.scene().removeItem(item.expanded)
            item.expanded = None
        else:
            item.expanded = OnnxPanel(item)

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11() * factor
        if MIN_SCALE <= scale <= MAX_SCALE:
            self.scale(factor, factor)

    def wheelEvent(self, event: QtGui.QWheelEvent) -> None:
        self.zoom(ZOOM_STEP if event.angleDelta().y() > 0 else 1 / ZOOM_STEP)

    def _item_at(self, pos: QtCore.QPoint) -> NodeItem | None:
        for item in self.items_at(pos):
            while item is not None and not isinstance(item, NodeItem):
                item = item.parentItem()
            if isinstance(item, NodeItem):
                return item
        return None

    def items_at(self, pos: QtCore.QPoint):
        return super().items(pos)

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:
        self._press = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QtGui.QMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        pos = event.position().toPoint()
        if self._press is not None and (pos - self._press).manhattanLength() < 4:  # a click, not a drag
            item = self._item_at(pos)
            if item is not None and item.node.dispatch is not None:
                self.sig_dispatch_clicked.emit(item.node.dispatch)
        self._press = None

    def mouseDoubleClickEvent(self, event: QtGui.QMouseEvent) -> None:
        item = self._item_at(event.position().toPoint())
        if item is not None and item.node.dispatch is not None:
            self.toggle_expanded(item)
