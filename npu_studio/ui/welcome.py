"""The page shown before a model is open: drop hint, example, recent files."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets


class WelcomePage(QtWidgets.QWidget):
    sig_open_example = QtCore.Signal()  # no arguments
    sig_open_path = QtCore.Signal(str)  # path from the recent list

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addStretch(1)
        title = QtWidgets.QLabel("<h2>NPU Studio</h2>")
        title.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        about = QtWidgets.QLabel("Compile a model with IREE phase by phase, read and edit the IR of every phase, "
                                 "inspect its dispatches and plan them for an NPU (legality, tiling, schedule).")
        about.setWordWrap(True)
        # A wrapped label placed with an alignment gets its narrowest width but the height of a wider
        # one (Qt's height-for-width), which clipped this text: a width and the height for it of its own.
        about.setFixedWidth(640)
        about.setMinimumHeight(about.heightForWidth(640))
        about.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        hint = QtWidgets.QLabel("To start, drop an .onnx, .mlir or .mlirbc file here, or a workspace folder,\n"
                                "use File ▸ Open (Ctrl+O), the example below, or reopen recent work.")
        hint.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.example_button = QtWidgets.QPushButton("Open the example model (single convolution)")
        self.example_button.clicked.connect(self.sig_open_example)
        self.recent = QtWidgets.QListWidget()
        self.recent.setMaximumWidth(640)
        self.recent.itemActivated.connect(
            lambda item: self.sig_open_path.emit(item.data(QtCore.Qt.ItemDataRole.UserRole)))
        layout.addWidget(title)
        layout.addWidget(about, alignment=QtCore.Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(hint)
        row = QtWidgets.QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.example_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(QtWidgets.QLabel("Recent:"), alignment=QtCore.Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.recent, alignment=QtCore.Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)

    def set_recent(self, paths: list[str]) -> None:
        """Recent models and workspaces by name and folder (the whole path is the item's tooltip)."""
        self.recent.clear()
        for p in paths:
            if Path(p).exists():
                item = QtWidgets.QListWidgetItem(recent_label(p))
                item.setData(QtCore.Qt.ItemDataRole.UserRole, p)
                item.setToolTip(p)
                self.recent.addItem(item)


def recent_label(path: str) -> str:
    """`relu.onnx — /home/me/models`; a workspace folder is marked as one."""
    p = Path(path)
    kind = " (workspace)" if p.is_dir() else ""
    return f"{p.name}{kind} — {p.parent}"
