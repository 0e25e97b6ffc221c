"""GraphDock: the dataflow graph with an overlay switcher and its legend, search, and a second build
side by side. The dock only shows; `GraphArea` (area.py) builds graphs and layouts off the GUI thread."""

from __future__ import annotations

from html import escape

from PySide6 import QtCore, QtWidgets

from ...core.graph.compare import GraphComparison
from ...core.graph.layout import Layout
from ...core.graph.model import DataflowGraph
from ...core.graph.style import NONE, Styler
from ...core.units import plural
from .canvas import GraphCanvas

NO_COMPARE = ""


class GraphDock(QtWidgets.QDockWidget):
    sig_dispatch_selected = QtCore.Signal(int)  # a dispatch of the open build
    sig_compare_requested = QtCore.Signal(str)  # what to set beside it (NO_COMPARE: nothing)
    sig_refresh_requested = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("Graph", parent)
        self.setObjectName("graph_dock")
        self.graph: DataflowGraph | None = None
        self.comparison: GraphComparison | None = None
        body = QtWidgets.QWidget()
        bar = QtWidgets.QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        self.overlay = QtWidgets.QComboBox()
        self.overlay.setObjectName("graphOverlay")
        # wide enough for "Op kind (none)", not for the longest overlay title (the search field needs the room)
        self.overlay.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.overlay.setMinimumContentsLength(15)
        self.overlay.setToolTip("What the dispatch nodes are coloured by")
        self.overlay.currentIndexChanged.connect(self._restyle)
        self.search = QtWidgets.QLineEdit()
        self.search.setObjectName("graphSearch")
        self.search.setPlaceholderText("Find: #12, conv, ONNX node, %tensor")
        self.search.setToolTip("Find a dispatch: #12, a kind (conv), an ONNX node or a %tensor; Enter finds the next")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self.find_next)
        self.compare = QtWidgets.QComboBox()
        self.compare.setObjectName("graphCompare")
        self.compare.setToolTip("Another build beside this one, aligned by ONNX provenance")
        self.compare.activated.connect(lambda _i: self.sig_compare_requested.emit(self.compare.currentData() or ""))
        fit = QtWidgets.QToolButton(text="Fit")
        fit.clicked.connect(self.fit)
        bar.addWidget(QtWidgets.QLabel("Colour by"))
        bar.addWidget(self.overlay)
        bar.addWidget(self.search, 1)
        bar.addWidget(QtWidgets.QLabel("Beside"))
        bar.addWidget(self.compare)
        bar.addWidget(fit)
        self.status = QtWidgets.QLabel("No model open.")
        self.status.setWordWrap(True)
        self.legend = QtWidgets.QLabel()
        self.legend.setObjectName("graphLegend")
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.left, self.right = GraphCanvas(), GraphCanvas()
        self.left.setObjectName("graphLeft")
        self.right.setObjectName("graphRight")
        self.right.hide()
        self.split = split = QtWidgets.QSplitter()
        split.addWidget(self.left)
        split.addWidget(self.right)
        self.left.sig_dispatch_clicked.connect(self.sig_dispatch_selected)
        self.right.sig_dispatch_clicked.connect(self._right_clicked)
        side = QtWidgets.QHBoxLayout()
        side.addWidget(split, 1)
        side.addWidget(self.legend, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        layout = QtWidgets.QVBoxLayout(body)
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addLayout(side, 1)
        self.setWidget(body)
        self._found: list[int] = []
        self._found_at = -1
        self.set_compare_choices([])

    # -- contents ---------------------------------------------------------------------

    def set_busy(self, text: str) -> None:
        self.status.setText(text)

    def show_graph(self, graph: DataflowGraph | None, layout: Layout | None, message: str = "") -> None:
        self.graph, self.comparison = graph, None
        self.right.hide()
        self.right.show_graph(None, None, None)
        current = self.overlay.currentData() or NONE
        self.overlay.blockSignals(True)
        self.overlay.clear()
        self.overlay.addItem("Op kind (none)", NONE)
        for kind, info in (graph.overlays.items() if graph else []):
            self.overlay.addItem(info["title"], kind)
        found = self.overlay.findData(current)
        self.overlay.setCurrentIndex(max(found, 0))
        self.overlay.blockSignals(False)
        self.left.show_graph(graph, layout, self.styler(graph))
        self._show_legend()
        if graph is None:
            self.status.setText(message or "No graph.")
            return
        notes = "; ".join(graph.notes)
        self.status.setText(f"{graph.build} · {graph.phase}: {plural(len(graph.dispatches()), 'dispatch')}, "
                            f"{plural(len(graph.edges), 'edge')}. Click selects, double-click shows its ONNX nodes."
                            + (f" ({notes})" if notes else ""))

    def show_comparison(self, comparison: GraphComparison | None, layout: Layout | None, message: str = "") -> None:
        self.comparison = comparison
        if comparison is None:
            self.right.hide()
            self.left.restyle(self.styler(self.graph))
            self._show_legend()
            if message:
                self.status.setText(message)
            return
        self.left.restyle(Styler(comparison.left, NONE, comparison.left_status))
        self.right.show_graph(comparison.right, layout, Styler(comparison.right, NONE, comparison.right_status))
        self.right.show()
        half = max(self.split.width() // 2, 1)  # shown again, the right pane would take nearly all
        self.split.setSizes([half, half])
        counts = comparison.counts()
        self.status.setText(f"Left {comparison.left.build} · {comparison.left.phase}, right {comparison.right.build} · "
                            f"{comparison.right.phase}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        self._show_legend()

    def set_compare_choices(self, choices: list[tuple[str, str]]) -> None:
        """(label, key) pairs of what can be set beside the open build."""
        self.compare.clear()
        self.compare.addItem("nothing", NO_COMPARE)
        for label, key in choices:
            self.compare.addItem(label, key)

    def styler(self, graph: DataflowGraph | None) -> Styler | None:
        return Styler(graph, self.overlay.currentData() or NONE) if graph is not None else None

    def _restyle(self) -> None:
        if self.graph is not None and self.comparison is None:
            self.left.restyle(self.styler(self.graph))
            self._show_legend()

    def _show_legend(self) -> None:
        if self.graph is None:
            self.legend.setText("")
            return
        styler = (Styler(self.comparison.right, NONE, self.comparison.right_status) if self.comparison
                  else self.styler(self.graph))
        rows = "".join(f'<tr><td style="background:{c}; border:1px solid #555">&nbsp;&nbsp;&nbsp;&nbsp;</td>'
                       f"<td>&nbsp;{escape(t)}</td></tr>" for c, t in styler.legend())
        self.legend.setText(f"<table cellspacing='2'>{rows}</table>" if rows else "")

    # -- selection and search ---------------------------------------------------------------

    def select(self, dispatch: int | None) -> None:
        """The session's selection: highlight and centre it here (and its counterpart beside)."""
        self.left.highlight(dispatch)
        if self.comparison is not None:
            self.right.highlight(self.comparison.right_of(dispatch) if dispatch is not None else None)

    def _right_clicked(self, dispatch: int) -> None:
        left = self.comparison.left_of(dispatch) if self.comparison is not None else None
        self.right.highlight(dispatch, centre=False)
        if left is not None:
            self.sig_dispatch_selected.emit(left)

    def find_next(self) -> None:
        if self.graph is None:
            return
        found = [n.dispatch for n in self.graph.search(self.search.text()) if n.dispatch is not None]
        if found != self._found:
            self._found, self._found_at = found, -1
        if not found:
            self.status.setText(f"Nothing matches {self.search.text()!r}.")
            return
        self._found_at = (self._found_at + 1) % len(found)
        self.status.setText(f"Match {self._found_at + 1} of {len(found)}.")
        self.sig_dispatch_selected.emit(found[self._found_at])

    def fit(self) -> None:
        for canvas in (self.left, self.right):
            if canvas.isVisible() and canvas.items:
                canvas.fitInView(canvas.scene().itemsBoundingRect(), QtCore.Qt.AspectRatioMode.KeepAspectRatio)
