"""ModuleDock: the compiled module's contents, and an executable's binary as assembly.

Read when asked (Inspect) on a background job; a new build makes the shown
contents stale, and they are dropped. Picking an executable and
Disassemble shows its assembly, each function headed by its dispatches;
Go to dispatch selects the first dispatch an executable serves.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from ...core.debug.module_contents import ModuleContents


class ModuleDock(QtWidgets.QDockWidget):
    sig_inspect_requested = QtCore.Signal()
    sig_disassemble_requested = QtCore.Signal(str)  # executable name
    sig_dispatch_selected = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("Module", parent)
        self.setObjectName("module_dock")
        body = QtWidgets.QWidget(self)
        bar = QtWidgets.QToolBar(body)
        self.inspect_action = bar.addAction("Inspect module", self.sig_inspect_requested.emit)
        self.executable_box = QtWidgets.QComboBox(body)
        self.executable_box.setAccessibleName("Executable")
        bar.addWidget(self.executable_box)
        self.disassemble_action = bar.addAction(
            "Disassemble", lambda: self.sig_disassemble_requested.emit(self.executable_box.currentText()))
        self.goto_action = bar.addAction("Go to dispatch", self._goto)
        self.text = QtWidgets.QPlainTextEdit(body, readOnly=True)
        self.text.setAccessibleName("Module contents")
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(bar)
        layout.addWidget(self.text, 1)
        self.setWidget(body)
        self.contents: ModuleContents | None = None
        self.show_contents(None)

    def set_busy(self, busy: bool, text: str = "") -> None:
        for action in (self.inspect_action, self.disassemble_action, self.goto_action):
            action.setEnabled(not busy and (action is self.inspect_action or self.contents is not None))
        if text:
            self.text.setPlainText(text)

    def show_contents(self, contents: ModuleContents | None, note: str = "") -> None:
        self.contents = contents
        self.executable_box.clear()
        if contents is None:
            self.text.setPlainText(note or "Inspect the compiled module: its functions, imports, executables "
                                           "and what makes it big.")
        else:
            self.executable_box.addItems([e.name for e in contents.executables])
            self.text.setPlainText("\n".join(contents.summary_lines()))
        self.set_busy(False)

    def show_text(self, text: str) -> None:
        self.text.setPlainText(text)

    def _goto(self) -> None:
        if self.contents is None:
            return
        e = next((x for x in self.contents.executables if x.name == self.executable_box.currentText()), None)
        if e is not None and e.dispatches:
            self.sig_dispatch_selected.emit(e.dispatches[0])
