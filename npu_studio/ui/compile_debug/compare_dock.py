"""The Compare dock: two builds of the workspace side by side (core/debug/build_compare.py).

Pick two builds (`main` and the build variants), Compare runs as a job (the
modules are run on the same inputs), and the dock shows the per-phase times,
counts and sizes, the passes whose time changed most, the outputs and the
diff of the first phase whose IR differs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.errors import StudioError
from ...core.units import format_bytes
from ...core.workspace import variants
from ...core.session import Session
from ...core.workspace.workspace import Workspace
from ..shell import Shell
from ..studio import Studio
from .profile_dock import _item, builds_of, on_disk

if TYPE_CHECKING:  # the comparison's module loads when a comparison starts, not at the app's start
    from ...core.debug.build_compare import BuildComparison

SAME_COLOR, DIFFERENT_COLOR = QtGui.QColor("#1b7f2a"), QtGui.QColor("#b00020")


def summary_rows(r: BuildComparison) -> list[tuple[str, str, str]]:
    def s(x):
        return f"{x:.3f} s" if x is not None else "-"

    rows = [(d.phase, s(d.a_seconds), s(d.b_seconds)) for d in r.phases]
    rows += [("compile total", s(r.total_seconds[0]), s(r.total_seconds[1])),
             ("dispatches", str(r.dispatches[0]), str(r.dispatches[1])),
             ("executables", str(r.executables[0]), str(r.executables[1])),
             ("module (vmfb)", format_bytes(r.vmfb_bytes[0]), format_bytes(r.vmfb_bytes[1])),
             ("executable objects", *(format_bytes(x) if x is not None else "-" for x in r.executable_bytes))]
    return rows


def verdict_text(r: BuildComparison) -> str:
    ir = ("IR: no difference in any phase" if r.first_difference is None
          else f"IR: first difference in {r.first_difference} (-{r.diff_counts[0]} +{r.diff_counts[1]} lines)")
    if r.outputs:
        worst = max(o.max_abs for o in r.outputs)
        out = f"outputs on {r.inputs}: " + ("bit-identical" if r.same_outputs else f"differ (max abs {worst:g})")
    else:
        out = "outputs not compared"
    return "No difference. " + ir if r.no_difference else f"{ir}; {out}"


class CompareDock(QtCore.QObject):
    sig_compared = QtCore.Signal(object)  # BuildComparison

    def __init__(self, session: Session, studio: Studio, shell: Shell):
        super().__init__(shell.parent_widget())
        self.session, self.studio, self.shell = session, studio, shell
        self.result: BuildComparison | None = None
        self._running = False
        self._build_widgets()
        studio.sig_index_finished.connect(self.refresh)

    def _build_widgets(self) -> None:
        self.a_combo, self.b_combo = QtWidgets.QComboBox(), QtWidgets.QComboBox()
        self.a_combo.setAccessibleName("Build A")
        self.b_combo.setAccessibleName("Build B")
        self.compare_button = QtWidgets.QPushButton("Compare")
        self.compare_button.clicked.connect(self.start_compare)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        bar = QtWidgets.QHBoxLayout()
        for w in (QtWidgets.QLabel("A"), self.a_combo, QtWidgets.QLabel("B"), self.b_combo, self.compare_button,
                  self.cancel_button):
            bar.addWidget(w)
        bar.addStretch(1)
        self.variant_name = QtWidgets.QLineEdit(placeholderText="variant name")
        self.variant_name.setAccessibleName("Variant name")
        self.variant_flags = QtWidgets.QLineEdit(placeholderText="extra iree-compile flags, e.g. --iree-opt-level=O3")
        self.variant_flags.setAccessibleName("Variant flags")
        self.variant_button = QtWidgets.QPushButton("Create and build variant")
        self.variant_button.clicked.connect(self.create_variant)
        new = QtWidgets.QHBoxLayout()
        for w in (self.variant_name, self.variant_flags, self.variant_button):
            new.addWidget(w)
        new.setStretch(1, 1)
        self.verdict = QtWidgets.QLabel("Pick two builds: main (the workspace's own) and build variants.")
        self.verdict.setWordWrap(True)
        self.verdict.setAccessibleName("Comparison verdict")
        self.summary = QtWidgets.QTableWidget(0, 3)
        self.summary.setAccessibleName("Builds side by side")
        self.passes = QtWidgets.QTableWidget(0, 5)
        self.passes.setHorizontalHeaderLabels(("phase", "pass", "A s", "B s", "change s"))
        self.passes.setAccessibleName("Pass time changes")
        self.passes.setSortingEnabled(True)
        for table in (self.summary, self.passes):
            table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
            table.verticalHeader().setVisible(False)
        self.notes = QtWidgets.QLabel()
        self.notes.setWordWrap(True)
        self.diff = QtWidgets.QPlainTextEdit()
        self.diff.setReadOnly(True)
        self.diff.setAccessibleName("First IR difference")
        self.diff.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        tables = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        tables.addWidget(self.summary)
        tables.addWidget(self.passes)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        splitter.addWidget(tables)
        splitter.addWidget(self.diff)
        body = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(body)
        layout.addLayout(bar)
        layout.addLayout(new)
        layout.addWidget(self.verdict)
        layout.addWidget(self.notes)
        layout.addWidget(splitter, 1)
        self.dock = QtWidgets.QDockWidget("Compare builds", self.shell.parent_widget())
        self.dock.setObjectName("compareBuildsDock")
        self.dock.setWidget(body)
        self.shell.add_dock(self.dock, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, visible=False)
        self._update_buttons()

    def refresh(self) -> None:
        names = builds_of(on_disk(self.session.workspace))
        for combo, default in ((self.a_combo, 0), (self.b_combo, 1)):
            current = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(names)
            combo.setCurrentText(current if current in names else names[min(default, len(names) - 1)] if names else "")
            combo.blockSignals(False)
        self._update_buttons()

    def start_compare(self) -> None:
        ws, a, b = self.session.workspace, self.a_combo.currentText(), self.b_combo.currentText()
        if ws is None or not a or not b or self._running:
            return
        root = ws.root
        self._running = True
        self.shell.set_status(f"Comparing {a} and {b}")
        from ...core.debug.build_compare import compare

        self.studio.jobs.start("compare", lambda report, token: compare(Workspace.open(root), a, b),
                               on_done=lambda result, _g: self.show_result(result), on_failed=self._failed,
                               on_finished=self._finished)
        self._update_buttons()

    def create_variant(self) -> None:
        """Check the flags with the compiler, record the variant and build it (a job; a failure changes nothing)."""
        ws, name, flags = self.session.workspace, self.variant_name.text().strip(), self.variant_flags.text()
        if ws is None or self._running:
            return
        root = ws.root

        def work(report, token):
            own = Workspace.open(root)
            variants.create(own, name, flags)
            job = variants.build_job(own, name, on_progress=lambda done, running: report(done, running))
            token.attach(job.cancel)
            return job.run()

        self._running = True
        self.shell.set_status(f"Building variant {name}")
        self.studio.jobs.start("compare", work, on_done=lambda v, _g: self._variant_built(v),
                               on_failed=self._failed, on_finished=self._finished,
                               on_progress=lambda done, running: self.shell.set_status(
                                   f"Building variant {name}: {running or 'done'}"))
        self._update_buttons()

    def _variant_built(self, variant) -> None:
        self.shell.set_status(f"Variant {variant.name} built")
        self.variant_name.clear()
        self.refresh()
        self.b_combo.setCurrentText(variant.name)

    def cancel(self) -> None:
        if self._running:
            self.studio.jobs.cancel("compare")  # the result is dropped; the modules' runs finish on their own

    def show_result(self, r: BuildComparison) -> None:
        self.result = r
        self.verdict.setText(verdict_text(r))
        color = SAME_COLOR if r.no_difference else DIFFERENT_COLOR
        self.verdict.setStyleSheet(f"color:{color.name()};font-weight:bold")
        self.notes.setText("\n".join(r.notes))
        rows = summary_rows(r)
        self.summary.setRowCount(len(rows))
        self.summary.setHorizontalHeaderLabels(("", r.a, r.b))
        for row, values in enumerate(rows):
            for col, value in enumerate(values):
                self.summary.setItem(row, col, QtWidgets.QTableWidgetItem(value))
        self.summary.resizeColumnsToContents()
        from ...core.debug.build_compare import TOP_PASS_CHANGES

        changes = (r.passes or [])[:TOP_PASS_CHANGES * 5]
        self.passes.setSortingEnabled(False)
        self.passes.setRowCount(len(changes))
        for row, p in enumerate(changes):
            cells = (_item(p.phase), _item(p.name), _item(p.a_wall, f"{p.a_wall:.4f}"),
                     _item(p.b_wall, f"{p.b_wall:.4f}"), _item(p.change, f"{p.change:+.4f}"))
            for col, cell in enumerate(cells):
                self.passes.setItem(row, col, cell)
        self.passes.setSortingEnabled(True)
        self.passes.resizeColumnsToContents()
        self.diff.setPlainText(r.diff)
        self.shell.set_status("Compared")
        self.sig_compared.emit(r)

    def _failed(self, exc: Exception, tb: str, _generation) -> None:
        self.shell.show_error(str(exc) if isinstance(exc, StudioError) else f"internal error: {exc}")
        if not isinstance(exc, StudioError):
            self.shell.append_log(tb, error=True)

    def _finished(self, _generation) -> None:
        self._running = False
        self.refresh()

    def _update_buttons(self) -> None:
        ready = self.session.workspace is not None and bool(self.a_combo.currentText())
        self.compare_button.setEnabled(ready and not self._running)
        self.variant_button.setEnabled(self.session.workspace is not None and not self._running)
        self.cancel_button.setEnabled(self._running)
