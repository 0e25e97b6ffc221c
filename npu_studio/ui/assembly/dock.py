"""AssemblyDock: the NPU program as its backend's assembly, linked to the schedule and the IR.

A one-line heading says which backend emitted what; a banner says when the listing on show
is stale (the NPU program is being rebuilt, or changed) or why there is none; "Selected
dispatch only" hides the other dispatches' lines. The listing itself is `AssemblyView`.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from ...core.npu.report.assembly_model import AssemblyModel
from ..banner import OneLineBanner
from .view import AssemblyView

STALE_STYLE = "background:#fff3cd;color:#664d03;padding:3px;"
FAILED_STYLE = "background:#f8d7da;color:#842029;padding:3px;"
MIN_LINES = 10  # lines the listing shows at least: a dock opened from the View menu grows to them


class AssemblyDock(QtWidgets.QDockWidget):
    sig_line_activated = QtCore.Signal(int)  # 1-based line the user clicked

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__("Assembly", parent)
        self.setObjectName("assembly_dock")
        body = QtWidgets.QWidget(self)
        self.heading = OneLineBanner(body)
        self.only_selected = QtWidgets.QCheckBox("Selected dispatch only", body)
        self.only_selected.setToolTip("Hide the lines of every other dispatch")
        self.banner = OneLineBanner(body)
        self.banner.hide()
        self.view = AssemblyView(body)
        self.view.setMinimumHeight(self.view.fontMetrics().height() * MIN_LINES + 8)  # opened readable
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.only_selected)
        layout = QtWidgets.QVBoxLayout(body)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.banner)
        layout.addWidget(self.view, 1)
        self.setWidget(body)
        self.only_selected.toggled.connect(self.view.set_only_marked)
        self.view.sig_line_activated.connect(self.sig_line_activated)
        self.show_model(None, "No NPU program yet.")

    @property
    def model(self) -> AssemblyModel | None:
        return self.view.model

    def show_model(self, model: AssemblyModel | None, note: str = "") -> None:
        """Show `model` as current (None: `note` in place of a listing)."""
        self.view.show_model(model, note)
        self.heading.set_message(model.summary() if model is not None and model.emitted is not None
                                 else "NPU assembly")
        self.banner.hide()

    def set_note(self, note: str) -> None:
        """No listing: `note` says why (no model open, the NPU program not built yet, ...)."""
        self.show_model(None, note)

    def mark_stale(self, why: str) -> None:
        """Keep the listing on show, marked as not the current program's."""
        self.banner.set_message(f"Stale: {why}. The listing is the previous NPU program's.")
        self.banner.setStyleSheet(STALE_STYLE)
        self.banner.show()

    def mark_current(self) -> None:
        if self.banner.full_text().startswith("Stale"):
            self.banner.hide()

    def mark_failed(self, message: str) -> None:
        self.banner.set_message(f"No assembly: {message}")
        self.banner.setStyleSheet(FAILED_STYLE)
        self.banner.show()

    def is_stale(self) -> bool:
        return not self.banner.isHidden() and self.banner.full_text().startswith("Stale")
