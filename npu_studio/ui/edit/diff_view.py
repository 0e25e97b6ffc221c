"""Side-by-side and unified views of a core `TextDiff`, with synchronized scrolling and a patch export.

Colours say what changed, as in a code review: removed lines red, added lines green, on both
views; a replaced line is red on the left and green on the right, its changed characters in a
stronger shade (core `changed_spans`); the unified view's hunk headers are blue.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir.diff import Span, TextDiff, changed_spans

REMOVED, ADDED = "#ffdcd8", "#d8f5d8"  # a line's ground
REMOVED_CHARS, ADDED_CHARS = "#ff9e97", "#8fdc8f"  # the changed characters of a replaced line
HUNK, HEADER = "#dbe9ff", "#eeeeee"
_PAD_COLOR = "#eeeeee"
# per side, the ground of each row tag (a replaced line is removed on the left, added on the right)
_ROW_COLORS = {"left": {"delete": REMOVED, "replace": REMOVED, "pad": _PAD_COLOR},
               "right": {"insert": ADDED, "replace": ADDED, "pad": _PAD_COLOR},
               "unified": {"delete": REMOVED, "insert": ADDED, "hunk": HUNK, "header": HEADER}}
_CHAR_COLORS = {"left": REMOVED_CHARS, "right": ADDED_CHARS}


def unified_tags(lines: list[str]) -> list[str]:
    """Each line of a unified diff as a row tag: header, hunk, delete, insert or equal."""
    tags = []
    for line in lines:
        if line.startswith(("--- ", "+++ ")) and (not tags or tags[-1] == "header"):
            tags.append("header")
        elif line.startswith("@@"):
            tags.append("hunk")
        else:
            tags.append({"-": "delete", "+": "insert"}.get(line[:1], "equal"))
    return tags


def changes_text(removed: int, added: int) -> str:
    return f"{removed} line{'' if removed == 1 else 's'} removed, {added} added"


class _DiffPane(QtWidgets.QPlainTextEdit):
    """One side, or the unified text: rows tinted by their tag when painted, a replaced row's changed
    characters in a stronger shade."""

    def __init__(self, side: str, parent=None):
        super().__init__(parent)
        self.side = side  # left, right or unified: which colours its tags take
        self.setReadOnly(True)
        self.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.row_tags: list[str] = []  # per row: equal, delete, insert, replace, or pad (unified: hunk, header)
        self.row_lines: list[int | None] = []  # per row: 1-based line of this side, None for padding
        self.spans_of: Callable[[int], list[Span]] = lambda row: []  # a replaced row's changed characters

    def set_rows(self, text: str, tags: list[str], lines: list[int | None]) -> None:
        self.row_tags, self.row_lines = tags, lines
        self.setPlainText(text)

    def row_color(self, row: int) -> str | None:
        tag = self.row_tags[row] if row < len(self.row_tags) else "equal"
        return _ROW_COLORS[self.side].get(tag)

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802
        # Tint only the visible rows: a 100,000-row diff costs what one screen costs.
        painter = QtGui.QPainter(self.viewport())
        block = self.firstVisibleBlock()
        offset = self.contentOffset()
        width = self.viewport().width()
        while block.isValid():
            rect = self.blockBoundingGeometry(block).translated(offset)
            if rect.top() > self.viewport().height():
                break
            n = block.blockNumber()
            color = self.row_color(n)
            if color:
                painter.fillRect(QtCore.QRectF(0, rect.top(), width, rect.height()), QtGui.QColor(color))
            if n < len(self.row_tags) and self.row_tags[n] == "replace" and self.side in _CHAR_COLORS:
                self._paint_spans(painter, block, rect, self.spans_of(n))
            block = block.next()
        painter.end()
        super().paintEvent(event)

    def _paint_spans(self, painter: QtGui.QPainter, block: QtGui.QTextBlock, rect: QtCore.QRectF,
                     spans: list[Span]) -> None:
        layout = block.layout()
        if layout is None or layout.lineCount() == 0:
            return
        line, x0 = layout.lineAt(0), rect.left() + layout.position().x()
        for start, end in spans:
            left, right = line.cursorToX(start)[0], line.cursorToX(end)[0]
            painter.fillRect(QtCore.QRectF(x0 + left, rect.top(), max(right - left, 1.0), rect.height()),
                             QtGui.QColor(_CHAR_COLORS[self.side]))


class DiffView(QtWidgets.QWidget):
    """Tabs: side by side (scrolling together) and unified; "Save patch…" writes the patch text."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAccessibleName("Diff view")
        self.diff: TextDiff | None = None
        self.left, self.right = _DiffPane("left"), _DiffPane("right")
        self.left.setAccessibleName("Diff left")
        self.right.setAccessibleName("Diff right")
        self._spans: dict[int, tuple[list[Span], list[Span]]] = {}  # by row, computed when first painted
        self._pairs: list[tuple[int | None, int | None]] = []  # by row: its line on each side
        self.left.spans_of = lambda row: self.row_spans(row)[0]
        self.right.spans_of = lambda row: self.row_spans(row)[1]
        self.unified_view = _DiffPane("unified")
        self.unified_view.setAccessibleName("Unified diff")
        self.left_label, self.right_label = QtWidgets.QLabel(), QtWidgets.QLabel()
        for label in (self.left_label, self.right_label):  # a long path never widens the window
            label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.summary = QtWidgets.QLabel()
        self.next_button = QtWidgets.QPushButton("Next change")
        self.next_button.clicked.connect(self.next_change)
        self.save_button = QtWidgets.QPushButton("Save patch…")
        self.save_button.clicked.connect(self._save_dialog)

        sides = QtWidgets.QWidget()
        grid = QtWidgets.QGridLayout(sides)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.left_label, 0, 0)
        grid.addWidget(self.right_label, 0, 1)
        grid.addWidget(self.left, 1, 0)
        grid.addWidget(self.right, 1, 1)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(sides, "Side by side")
        self.tabs.addTab(self.unified_view, "Unified")
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.next_button)
        bar.addWidget(self.save_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.tabs, 1)

        # Synchronized scrolling: both panes have the same rows, so the same scroll values.
        for a, b in ((self.left, self.right), (self.right, self.left)):
            a.verticalScrollBar().valueChanged.connect(b.verticalScrollBar().setValue)
            a.horizontalScrollBar().valueChanged.connect(b.horizontalScrollBar().setValue)

    def set_diff(self, diff: TextDiff) -> None:
        self.diff = diff
        self._spans = {}
        self._pairs = [(i, j) for i, j, _tag in diff.rows()]
        left_text, right_text = [], []
        left_tags, right_tags = [], []
        left_lines, right_lines = [], []
        for i, j, tag in diff.rows():
            left_text.append(diff.a_lines[i] if i is not None else "")
            right_text.append(diff.b_lines[j] if j is not None else "")
            left_tags.append(tag if i is not None else "pad")
            right_tags.append(tag if j is not None else "pad")
            left_lines.append(diff.a_origin[i] + 1 if i is not None else None)
            right_lines.append(diff.b_origin[j] + 1 if j is not None else None)
        self.left.set_rows("\n".join(left_text), left_tags, left_lines)
        self.right.set_rows("\n".join(right_text), right_tags, right_lines)
        for label, name in ((self.left_label, diff.a_name), (self.right_label, diff.b_name)):
            label.setText(name)
            label.setToolTip(name)
        unified = diff.unified().splitlines() or ["(no changes)"]
        self.unified_view.set_rows("\n".join(unified), unified_tags(unified) if diff.changed else [], [])
        removed, added = diff.counts()
        self.summary.setText(changes_text(removed, added) if diff.changed else
                             "No changes (locations and huge constants are not compared)")
        self.save_button.setEnabled(diff.changed)
        self.next_button.setEnabled(diff.changed)

    def row_spans(self, row: int) -> tuple[list[Span], list[Span]]:
        """The changed characters of a replaced row, on the left and on the right."""
        if row not in self._spans:
            i, j = self._pairs[row] if row < len(self._pairs) else (None, None)
            if self.diff is None or i is None or j is None:
                self._spans[row] = ([], [])  # a line on one side only is wholly removed or added
            else:
                self._spans[row] = changed_spans(self.diff.a_lines[i], self.diff.b_lines[j])
        return self._spans[row]

    def changed_rows(self) -> list[int]:
        """0-based rows where a change starts."""
        tags = self.left.row_tags
        return [n for n, t in enumerate(tags) if t != "equal" and (n == 0 or tags[n - 1] == "equal")]

    def next_change(self) -> None:
        current = self.left.verticalScrollBar().value()
        starts = self.changed_rows()
        target = next((n for n in starts if n > current + 2), starts[0] if starts else None)
        if target is not None:
            self.left.verticalScrollBar().setValue(max(0, target - 2))

    def save_patch(self, path: Path) -> None:
        if self.diff is not None:
            Path(path).write_text(self.diff.patch_text())

    def _save_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Save patch", "changes.patch",
                                                        "Patches (*.patch *.diff);;All files (*)")
        if path:
            try:
                self.save_patch(Path(path))
            except OSError as exc:
                QtWidgets.QMessageBox.warning(self, "Save patch", f"{path}: {exc.strerror or exc}")
