"""The passes inside one phase: a list (hide unchanged, search) over a core `PassTrace`, one pass's diff or IR.

Only the selected pass's two dumps are ever read from the trace file, so a 100 MB trace stays usable.
The trace is built in the background (run_in_background) and cached in the workspace by the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from .diff_view import DiffView

if TYPE_CHECKING:  # a trace is handed in: the module that builds one loads at the first trace
    from ...core.debug.pass_trace import PassRecord, PassTrace

_COLUMNS = ("#", "Pass", "Op", "Seconds", "Changed")


class PassView(QtWidgets.QWidget):
    sig_status = QtCore.Signal(str)  # one line for the status bar / log

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAccessibleName("Pass view")
        self.trace: PassTrace | None = None
        self.table = QtWidgets.QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(_COLUMNS)
        self.table.setAccessibleName("Passes")
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        for col in range(len(_COLUMNS)):  # the name takes what the numbers leave, never collapsing
            header.setSectionResizeMode(col, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(24)
        self.table.itemSelectionChanged.connect(self._on_selection)

        self.hide_unchanged = QtWidgets.QCheckBox("Hide unchanged")
        self.hide_unchanged.toggled.connect(self._apply_filter)
        self.search = QtWidgets.QLineEdit()
        self.search.setPlaceholderText("Pass name, IR text, or dispatch #N")
        self.search.setAccessibleName("Pass search")
        self.search.returnPressed.connect(lambda: self.find(self.search.text(), self.mode.currentIndex()))
        self.mode = QtWidgets.QComboBox()
        self.mode.addItems(["Filter pass names", "First pass whose output introduces", "First pass that changed",
                            "First pass whose output contains"])
        self.mode.setAccessibleName("Search kind")
        self.mode.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(14)
        self.show_ir = QtWidgets.QCheckBox("IR after the pass")
        self.show_ir.toggled.connect(self._on_selection)
        self.status = QtWidgets.QLabel()

        self.diff_view = DiffView()
        self.ir_text = QtWidgets.QPlainTextEdit(readOnly=True)
        self.ir_text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.ir_text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.detail = QtWidgets.QStackedWidget()
        self.detail.addWidget(self.diff_view)
        self.detail.addWidget(self.ir_text)

        top = QtWidgets.QHBoxLayout()
        for w in (self.hide_unchanged, self.mode, self.search, self.show_ir):
            top.addWidget(w)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setSizes([420, 800])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)

    # -- model --------------------------------------------------------------------

    def set_trace(self, trace: PassTrace) -> None:
        self.trace = trace
        self.table.setRowCount(len(trace.passes))
        for row, p in enumerate(trace.passes):
            cells = (str(p.index), "  " * p.depth + p.label, p.op, f"{p.seconds:.3f}", "yes" if p.changed else "")
            for col, value in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(value)
                if col == 0:
                    item.setData(QtCore.Qt.ItemDataRole.UserRole, p.index)
                self.table.setItem(row, col, item)
        self._apply_filter()
        self.status.setText(f"{trace.phase}: {len(trace.passes)} passes, {len(trace.changed())} changed the IR "
                            f"(traced in {trace.seconds:.1f} s; {trace.path})")

    def visible_passes(self) -> list[int]:
        return [r for r in range(self.table.rowCount()) if not self.table.isRowHidden(r)]

    def selected_pass(self) -> PassRecord | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or self.trace is None:
            return None
        return self.trace.passes[rows[0].row()]

    def select_pass(self, index: int) -> None:
        self.table.setRowHidden(index, False)
        self.table.selectRow(index)
        self.table.scrollToItem(self.table.item(index, 0))

    # -- searching ----------------------------------------------------------------

    def find(self, text: str, mode: int = 0) -> PassRecord | None:
        """0: filter by pass name; 1: first pass whose output introduces `text`; 2: first pass that changed
        `text` (a symbol, or `#N` / `dispatch N` for the dispatch of that number in this phase);
        3: first pass whose output contains `text`."""
        if self.trace is None:
            return None
        if mode == 0:
            self._apply_filter()
            return None
        if mode == 2:
            found = self.trace.first_changing_symbol(self._symbol_for(text))
        else:
            found = self.trace.first_output_containing(text, introduced=mode == 1)
        if found is None:
            self.status.setText(f"no pass found for {text!r}")
            return None
        self.select_pass(found.index)
        self.status.setText(f"pass #{found.index}: {found.name} on {found.op}")
        return found

    def _symbol_for(self, text: str) -> str:
        digits = text.strip().lstrip("#").removeprefix("dispatch").strip()
        if digits.isdigit() and self.trace is not None:
            # Dispatch numbers as the dispatch table shows them: IREE names executables <func>_dispatch_<N>.
            return self._dispatch_symbol(int(digits))
        return text.strip()

    def _dispatch_symbol(self, n: int) -> str:
        import re

        pattern = re.compile(rf"@([\w$.\-]*_dispatch_{n})\b")
        last = self.trace.passes[-1] if self.trace and self.trace.passes else None
        if last is not None:
            m = pattern.search(self.trace.text(last, "after"))
            if m:
                return "@" + m.group(1)
        return f"_dispatch_{n}"

    # -- internals ----------------------------------------------------------------

    def _apply_filter(self) -> None:
        if self.trace is None:
            return
        needle = self.search.text().strip().lower() if self.mode.currentIndex() == 0 else ""
        hide = self.hide_unchanged.isChecked()
        for row, p in enumerate(self.trace.passes):
            visible = (not hide or p.changed) and (not needle or needle in p.label.lower() or needle in p.op.lower())
            self.table.setRowHidden(row, not visible)

    def _on_selection(self, *_args) -> None:
        p = self.selected_pass()
        if p is None or self.trace is None:
            return
        if self.show_ir.isChecked():
            self.ir_text.setPlainText(self.trace.text(p, "after"))
            self.detail.setCurrentWidget(self.ir_text)
        else:
            self.diff_view.set_diff(self.trace.diff(p))
            self.detail.setCurrentWidget(self.diff_view)
        self.sig_status.emit(f"pass #{p.index} {p.name} on {p.op}: {'changed' if p.changed else 'no change'}")
