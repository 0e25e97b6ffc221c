"""The numerics trace in the real main window: error column, first divergent dispatch selected, error plot."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore

from npu_studio.core.ir.dispatch_index import index_file
from npu_studio.core.workspace.workspace import compile_model
from tests.core.debug import trace_models as models

from .test_npu_in_app import WAIT, make_window, open_workspace

EDITED = 1


@pytest.fixture
def edited_mlp(tmp_path):
    """The three-layer MLP with `addf` -> `subf` in dispatch #1's bias add (a flow edit, resumed)."""
    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    flow = ws.snapshot_path("flow").read_text()
    rec = index_file(ws.snapshot_path("flow"), "flow").dispatches[EDITED]
    at = flow.index("arith.addf", flow.index(f"flow.executable private @{rec.executable} "))
    ws.resume("flow", flow[:at] + "arith.subf" + flow[at + len("arith.addf"):])
    return ws


@pytest.fixture
def window(qtbot, tmp_path, edited_mlp):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    open_workspace(w, qtbot, edited_mlp)
    yield w
    w.jobs.stop_all()


def test_trace_marks_and_selects_the_edited_dispatch(window, qtbot):
    dock = window.trace_dock
    dock.trace_action.trigger()
    qtbot.waitUntil(lambda: window.trace.report is not None, timeout=WAIT)
    table = window.dispatch_table
    col = table.column("vs ONNX")
    cells = {table.item(r, 0).data(QtCore.Qt.ItemDataRole.UserRole): table.item(r, col).text()
             for r in range(table.rowCount())}
    assert not cells[0].startswith("DEPARTS")
    assert cells[EDITED].startswith("DEPARTS") and cells[2].startswith("DEPARTS")
    # the first divergent dispatch is selected everywhere: table row, detail, plot marker
    assert window.session.selection.dispatch == EDITED == table.selected_dispatch()
    assert dock.point_count() == 3
    assert f"Dispatch #{EDITED} against ONNX tensor" in dock.detail.toPlainText()
    assert dock.histogram_bars() == 1  # the selected dispatch's values
    assert "First divergent dispatch: #1" in dock.status.text()
    # picking a point on the plot selects its dispatch
    dock.sig_dispatch_selected.emit(0)
    assert table.selected_dispatch() == 0 and "Dispatch #0" in dock.detail.toPlainText()
    # the column stays when another phase is shown
    window.show_phase("stream")
    assert "vs ONNX" in table.headers()


def test_trace_of_a_demoted_variant(qtbot, tmp_path):
    from npu_studio.core.workspace import variants

    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    variants.create(ws, "demote-f16", ["--iree-input-demote-f32-to-f16"])
    variants.build(ws, "demote-f16")
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    try:
        open_workspace(w, qtbot, ws)
        dock = w.trace_dock
        assert [dock.build_box.itemText(i) for i in range(dock.build_box.count())] == ["main", "demote-f16"]
        dock.build_box.setCurrentText("demote-f16")
        dock.trace_action.trigger()
        qtbot.waitUntil(lambda: w.trace.report is not None, timeout=WAIT)
        report = w.trace.report
        assert "build variant 'demote-f16'" in report.notes
        # the variant's flow snapshot computes in f16 (its dispatches' results are f16)
        assert {d.dtype for d in report.dispatches} == {"float16"}
        assert report.first_divergent is None
    finally:
        w.jobs.stop_all()
