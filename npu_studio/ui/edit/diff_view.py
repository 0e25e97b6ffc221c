"""Side-by-side and unified views of a core `TextDiff`, with synchronized scrolling and a patch export."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.ir.diff import TextDiff

_ROW_COLORS = {"delete": "#ffd7d5", "insert": "#d4f7d4", "replace": "#fff1c2"}
_PAD_COLOR = "#eeeeee"


class _DiffPane(QtWidgets.QPlainTextEdit):
    """One side: aligned rows (blank rows pad the other side's lines), changed rows tinted when painted."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.row_tags: list[str] = []  # per row: equal, delete, insert, replace, or pad
        self.row_lines: list[int | None] = []  # per row: 1-based line of this side, None for padding

    def set_rows(self, text: str, tags: list[str], lines: list[int | None]) -> None:
        self.row_tags, self.row_lines = tags, lines
        self.setPlainText(text)

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
            tag = self.row_tags[n] if n < len(self.row_tags) else "equal"
            color = _PAD_COLOR if tag == "pad" else _ROW_COLORS.get(tag)
            if color:
                painter.fillRect(QtCore.QRectF(0, rect.top(), width, rect.height()), QtGui.QColor(color))
            block = block.next()
        painter.end()
        super().paintEvent(event)


class DiffView(QtWidgets.QWidget):
    """Tabs: side by side (scrolling together) and unified; "Save patch…" writes the patch text."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAccessibleName("Diff view")
        self.diff: TextDiff | None = None
        self.left, self.right = _DiffPane(), _DiffPane()
        self.left.setAccessibleName("Diff left")
        self.right.setAccessibleName("Diff right")
        self.unified_view = QtWidgets.QPlainTextEdit(readOnly=True)
        self.unified_view.setAccessibleName("Unified diff")
        self.unified_view.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.unified_view.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.left_label, self.right_label = QtWidgets.QLabel(), QtWidgets.QLabel()
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
        self.left_label.setText(diff.a_name)
        self.right_label.setText(diff.b_name)
        self.unified_view.setPlainText(diff.unified() or "(no changes)")
        removed, added = diff.counts()
        self.summary.setText(f"{removed} lines removed, {added} added" if diff.changed else
                             "No changes (locations and huge constants are not compared)")
        self.save_button.setEnabled(diff.changed)
        self.next_button.setEnabled(diff.changed)

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
