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


def test_break_after_the_selected_dispatch_shows_its_output(qtbot, tmp_path):
    from npu_studio.core.executables import substitution as subs
    from npu_studio.core.executables.catalog import list_executables
    from npu_studio.core.workspace import substitutions as sub_records

    ws = compile_model(models.mlp_bias(tmp_path / "mlp.onnx"), tmp_path / "ws")
    info = next(e for e in list_executables(ws) if e.dispatches == [EDITED])
    source = info.source.read_text()
    at = source.rfind("arith.addf %in")
    subs.substitute(ws, info.name, sub_records.SOURCE, source[:at] + "arith.subf" + source[at + 10:]).run()
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    try:
        open_workspace(w, qtbot, ws)
        dock = w.trace_dock
        w.session.select_dispatch(EDITED)
        dock.break_action.trigger()
        qtbot.waitUntil(lambda: "break after dispatch" in dock.status.text() or "failed" in dock.status.text(),
                        timeout=WAIT)
        assert f"IREE's own break after dispatch #{EDITED} (--iree-flow-break-dispatch=@mlp_bias:{EDITED})" \
            in dock.status.text()
        assert "DEPARTS from ONNX tensor 'h1'" in dock.status.text()
        text = dock.detail.toPlainText()
        assert "against ONNX tensor 'h1'" in text and "fitted to its buffer layout" in text
        assert dock.histogram_bars() == 1
        # the break variant is built but not offered for a whole trace
        assert [dock.build_box.itemText(i) for i in range(dock.build_box.count())] == ["main"]
        assert "break-1" in ws.manifest.variants or "break-1" in type(ws).open(ws.root).manifest.variants
    finally:
        w.jobs.stop_all()
