"""The one question the app asks before it runs what a workspace someone sent holds (core/workspace/trust.py)."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets


def ask(parent: QtWidgets.QWidget | None, root: Path, action: str) -> bool:
    """Whether the user trusts the workspace at `root`, told what would run; the caller keeps the answer."""
    box = QtWidgets.QMessageBox(parent)
    box.setIcon(QtWidgets.QMessageBox.Icon.Warning)
    box.setWindowTitle("Trust this workspace?")
    box.setText(f"{root} was not created by you on this machine.")
    box.setInformativeText(f"{action[:1].upper()}{action[1:]} would run what the workspace holds. Trust it only "
                           "if you trust whoever made it. Until then it stays in restricted mode: reading, "
                           "indexing, diffing and the NPU plan work.")
    trust = box.addButton("Trust", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QtWidgets.QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is trust
