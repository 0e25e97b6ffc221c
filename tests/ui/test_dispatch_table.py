"""The dispatch table and its panel on hand-made records: columns, sort, filter, frozen columns, detail."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore  # noqa: E402

from npu_studio.core.ir.dispatch_index import DispatchRecord, PhaseIndex  # noqa: E402
from npu_studio.core.ir.linalg import OpDescription, TensorInfo  # noqa: E402
from npu_studio.ui.dispatches.panel import DispatchPanel  # noqa: E402
from npu_studio.core.npu_columns import HEADERS  # noqa: E402


def op(kind: str, flops: int) -> OpDescription:
    t = TensorInfo((4, 8), "f32")
    return OpDescription(op_name="linalg.generic", kind=kind, dims={"M": 4} if "mat" in kind else {},
                         strides=(), dilations=(), groups=None, loop_ranges=(4, 8), iterator_types=(),
                         loop_dims=(), inputs=(t,), outputs=(t,), flops=flops, bytes_read=128,
                         bytes_written=128)


RECORDS = [  # (index, kind, flops, ONNX node, on the NPU?)
    (0, "conv", 3_000_000_000, "n0", True),
    (1, "elementwise", 1_000_000, "n1", False),
    (2, "matmul", 9_000_000_000, "n2", True),
    (3, "conv", 5_000_000_000, "n3", False),
]
OP_TYPES = {"n0": "Conv", "n1": "Relu", "n2": "MatMul", "n3": "Conv"}


@pytest.fixture
def panel(qtbot):
    p = DispatchPanel()
    qtbot.addWidget(p)
    p.resize(560, 400)
    p.show()
    qtbot.waitExposed(p)
    index = PhaseIndex("flow", None, [DispatchRecord(index=i, root=op(k, f), onnx_nodes=[n], executable=f"d{i}",
                                                     export=f"d{i}_e", config={"pipeline": "CPUDoubleTilingExpert"})
                                      for i, k, f, n, _ in RECORDS], {}, 4, 4, 0, 0)
    p.table.set_index(index, OP_TYPES)
    p.table.set_extra_columns(HEADERS, {i: ("NPU" if npu else "CPU", "" if npu else "unsupported dtype f32",
                                            "M4 N8" if npu else "", "12 KiB" if npu else "")
                                        for i, _, _, _, npu in RECORDS})
    p.refresh_filters()
    return p


def column_texts(table, header: str) -> list[str]:
    c = table.column(header)
    return [table.item(r, c).text() for r in range(table.rowCount()) if not table.isRowHidden(r)]


def test_columns_put_kind_and_npu_first_and_name_onnx_ops(panel):
    t = panel.table
    assert t.headers()[:6] == ("#", "kind", "NPU", "reason", "tile", "SRAM")
    assert column_texts(t, "ONNX") == ["Conv n0", "Relu n1", "MatMul n2", "Conv n3"]
    assert column_texts(t, "FLOPs") == ["3.0 GFLOP", "1.0 MFLOP", "9.0 GFLOP", "5.0 GFLOP"]
    # The NPU columns are on screen at the panel's default width (560 px of a 1400 px window).
    right = t.columnViewportPosition(t.column("SRAM")) + t.columnWidth(t.column("SRAM"))
    assert right <= t.viewport().width()


def test_sorting_by_a_number_and_back_by_index(panel, qtbot):
    t = panel.table
    t.sortByColumn(t.column("FLOPs"), QtCore.Qt.SortOrder.DescendingOrder)
    assert t.visible_dispatches() == [2, 3, 0, 1]
    # Clicking `#` in the frozen header sorts by dispatch number (numbers, not text).
    frozen_header = t.frozen.horizontalHeader()
    qtbot.mouseClick(frozen_header.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=QtCore.QPoint(frozen_header.sectionPosition(0) + 5, frozen_header.height() // 2))
    assert t.visible_dispatches() == [0, 1, 2, 3]
    qtbot.mouseClick(frozen_header.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=QtCore.QPoint(frozen_header.sectionPosition(0) + 5, frozen_header.height() // 2))
    assert t.visible_dispatches() == [3, 2, 1, 0]


def test_filters_by_kind_placement_and_text_and_survive_sorting(panel):
    t = panel.table
    assert [panel.kind_filter.itemText(i) for i in range(panel.kind_filter.count())] == [
        "all kinds", "conv", "elementwise", "matmul"]
    panel.kind_filter.setCurrentText("conv")
    assert t.visible_dispatches() == [0, 3]
    panel.place_filter.setCurrentText("NPU")
    assert t.visible_dispatches() == [0]
    panel.kind_filter.setCurrentText("all kinds")
    assert t.visible_dispatches() == [0, 2]
    t.sortByColumn(t.column("FLOPs"), QtCore.Qt.SortOrder.DescendingOrder)
    assert t.visible_dispatches() == [2, 0]  # the filter still holds after the rows moved
    panel.place_filter.setCurrentText("CPU")
    panel.text_filter.setText("relu")
    assert t.visible_dispatches() == [1]
    # The frozen columns hide the same rows.
    assert [r for r in range(t.rowCount()) if not t.frozen.isRowHidden(r)] == \
        [r for r in range(t.rowCount()) if not t.isRowHidden(r)]


def test_the_frozen_columns_stay_while_scrolling_sideways(panel, qtbot):
    t = panel.table
    panel.resize(260, 400)  # narrow: the table must scroll
    qtbot.waitUntil(lambda: t.horizontalScrollBar().maximum() > 0)
    t.horizontalScrollBar().setValue(t.horizontalScrollBar().maximum())
    assert t.columnViewportPosition(0) < 0  # the table's own `#` column scrolled away
    frozen = t.frozen
    assert frozen.isVisible() and frozen.geometry().left() <= t.frameWidth() + 1
    assert frozen.width() == t.columnWidth(0) + t.columnWidth(1)
    assert frozen.columnViewportPosition(0) == 0 and not frozen.isColumnHidden(1)
    assert all(frozen.isColumnHidden(c) for c in range(2, t.columnCount()))
    assert frozen.model().index(2, 0).data() == t.item(2, 0).text()
    # Selecting in the table selects the same row in the frozen columns.
    t.select_dispatch(2)
    assert [i.row() for i in frozen.selectionModel().selectedRows()] == [t.visible_dispatches().index(2)]


def test_detail_is_a_summary_with_the_raw_record_behind_a_toggle(panel):
    rec = panel.table.record(3)
    panel.show_record(rec, OP_TYPES, npu="NPU (npu-mid): CPU fallback: unsupported dtype f32")
    text = panel.detail.toPlainText()
    assert text.startswith("Dispatch #3: conv\nONNX: Conv n3\n")
    assert "CPU fallback: unsupported dtype f32" in text and "IREE pipeline: CPUDoubleTilingExpert" in text
    assert "{" not in text
    panel.raw_toggle.setChecked(True)
    assert json.loads(panel.detail.toPlainText()) == rec.to_json()
    panel.raw_toggle.setChecked(False)
    assert panel.detail.toPlainText() == text


def test_a_row_action_works_on_the_frozen_columns_too(panel, qtbot):
    """Right-click or double-click on `#` or kind (a view of its own on top) reaches the row's action."""
    from PySide6 import QtGui

    t = panel.table
    triggered = []
    action = QtGui.QAction("Open executable", t)
    action.triggered.connect(lambda: triggered.append(t.selected_dispatch()))
    t.add_row_action(action, on_double_click=True)
    assert action in t.actions() and action in t.frozen.actions()
    assert t.frozen.contextMenuPolicy() == QtCore.Qt.ContextMenuPolicy.ActionsContextMenu
    row = t.visible_dispatches().index(2)
    cell = t.frozen.visualRect(t.frozen.model().index(row, 1)).center()
    qtbot.mouseClick(t.frozen.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=cell)  # a double-click's first press
    qtbot.mouseDClick(t.frozen.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=cell)
    assert triggered == [2]
