"""The dispatch table on thousands of records: every dispatch shown once with its record's texts,
sorts against Python's `sorted` of the record values (blanks last), filters, marks and selection.

6,000 records is past the size at which sort and search texts are made a slice per event-loop
turn, so both the immediate and the sliced paths are checked.
"""

from __future__ import annotations

import os
import random

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from npu_studio.core.ir.dispatch_index import DispatchRecord, PhaseIndex  # noqa: E402
from npu_studio.core.ir.linalg import OpDescription, TensorInfo  # noqa: E402
from npu_studio.core.units import format_flops  # noqa: E402
from npu_studio.ui.dispatches.table import DispatchTable  # noqa: E402
from npu_studio.ui.timeline import BADGE_ALERT  # noqa: E402

N = 6000
KINDS = ("conv", "matmul", "elementwise", "reduction")
Asc, Desc = QtCore.Qt.SortOrder.AscendingOrder, QtCore.Qt.SortOrder.DescendingOrder


def op(kind: str, flops: int, rows: int) -> OpDescription:
    t = TensorInfo((rows, 8), "f32")
    return OpDescription(op_name="linalg.generic", kind=kind, dims={}, strides=(), dilations=(), groups=None,
                         loop_ranges=(rows, 8), iterator_types=(), loop_dims=(), inputs=(t,), outputs=(t,),
                         flops=flops, bytes_read=0, bytes_written=0)


class Truth:
    """What each dispatch's cells must read, written here from the values the records are built from."""

    def __init__(self, seed: int = 40):
        rng = random.Random(seed)
        numbers = rng.sample(range(10 * N), N)  # dispatch numbers, not in order, with gaps
        self.kind, self.flops, self.rows, self.onnx, self.op_types = {}, {}, {}, {}, {}
        records = []
        for i, d in enumerate(numbers):
            self.flops[d] = None if i % 7 == 0 else rng.randrange(1, 10**12)  # every 7th: no root op, blank
            self.kind[d] = "" if self.flops[d] is None else KINDS[rng.randrange(len(KINDS))]
            self.rows[d] = 1 + i % 50
            node = f"node_{rng.randrange(10**6)}"
            self.op_types[node] = "Conv"
            self.onnx[d] = f"Conv {node}"
            root = None if self.flops[d] is None else op(self.kind[d], self.flops[d], self.rows[d])
            records.append(DispatchRecord(index=d, root=root, onnx_nodes=[node]))
        self.index = PhaseIndex("flow", None, records, {}, N, N, 0, 0)

    def texts(self, d: int) -> dict[str, str]:
        has_root = self.flops[d] is not None
        return {"#": f"#{d}", "ONNX": self.onnx[d],
                "FLOPs": format_flops(self.flops[d]) if has_root else "",
                "shapes": f"{self.rows[d]}x8 → {self.rows[d]}x8" if has_root else "",
                "dtype": "f32" if has_root else ""}


@pytest.fixture(scope="module")
def truth():
    return Truth()


@pytest.fixture
def table(qtbot, truth):
    t = DispatchTable()
    qtbot.addWidget(t)
    t.resize(700, 400)
    t.show()
    qtbot.waitExposed(t)
    t.set_index(truth.index, truth.op_types)
    return t


def settle(qtbot, table):
    qtbot.waitUntil(lambda: not table.busy(), timeout=30_000)


def test_every_dispatch_is_shown_once_with_its_records_texts(table, truth):
    assert table.rowCount() == N
    shown = table.visible_dispatches()
    assert shown == sorted(truth.flops)  # `#` ascending, as numbers
    for row, d in enumerate(shown):
        expected = truth.texts(d)
        assert {h: table.item(row, table.column(h)).text() for h in expected} == expected
        assert table.item(row, table.column("shapes")).toolTip() == expected["shapes"]
        assert table.item(row, 0).data(QtCore.Qt.ItemDataRole.UserRole) == d
    # the model behind both views answers the same texts as the table's cells
    assert table.frozen.model().index(N - 1, 0).data() == f"#{shown[-1]}"


def test_numeric_sort_orders_as_numbers_with_blanks_last(table, truth):
    with_flops = [v for v in truth.flops.values() if v is not None]
    blanks = sum(v is None for v in truth.flops.values())
    for order, reverse in ((Asc, False), (Desc, True)):
        table.sortByColumn(table.column("FLOPs"), order)
        got = [truth.flops[d] for d in table.visible_dispatches()]
        assert got == sorted(with_flops, reverse=reverse) + [None] * blanks
    # an extra column's (text, key) values: sorted by the key, blank where a dispatch has none
    keys = {d: (d * 7919) % 1000 / 10 for d in list(truth.flops)[::2]}
    table.set_extra_columns(("score",), {d: ((f"{k:.1f}%", k),) for d, k in keys.items()})
    table.sortByColumn(table.column("score"), Desc)
    got = [keys.get(d) for d in table.visible_dispatches()]
    assert got == sorted(keys.values(), reverse=True) + [None] * (N - len(keys))
    row = table.visible_dispatches().index(max(keys, key=keys.get))
    assert table.item(row, table.column("score")).text() == f"{max(keys.values()):.1f}%"


def test_a_text_sort_of_a_big_table_follows_its_labels(table, truth, qtbot):
    table.sortByColumn(table.column("ONNX"), Asc)
    assert table.busy()  # the labels are made a slice per event-loop turn...
    table.set_extra_columns(("NPU",), {})  # ...and made again after a refill meanwhile
    settle(qtbot, table)
    assert [truth.onnx[d] for d in table.visible_dispatches()] == sorted(truth.onnx.values())
    assert table.horizontalHeader().sortIndicatorSection() == table.column("ONNX")


def test_filters_hide_exactly_the_rows_that_do_not_match(table, truth, qtbot):
    table.set_filter(kind="matmul")
    assert set(table.visible_dispatches()) == {d for d, k in truth.kind.items() if k == "matmul"}
    needle = truth.onnx[next(iter(truth.onnx))].split()[1][:8].upper()  # part of a node name, another case
    table.set_filter(kind=None, text=needle)
    settle(qtbot, table)
    expected = {d for d in truth.flops
                if needle.lower() in " ".join([truth.kind[d], *truth.texts(d).values()]).lower()}
    assert expected and set(table.visible_dispatches()) == expected and table.rowCount() == len(expected)
    table.set_filter(kind=None, text="")
    assert sorted(table.visible_dispatches()) == sorted(truth.flops)
    # by placement: the NPU column's text
    npu = {d for d in list(truth.flops)[::3]}
    table.set_extra_columns(("NPU",), {d: ("NPU mac" if d in npu else "CPU",) for d in truth.flops})
    table.set_filter(placement="NPU")
    assert set(table.visible_dispatches()) == npu


def test_selection_survives_refills_sorts_and_filters(table, truth, qtbot):
    chosen = sorted(truth.flops)[4321]
    with qtbot.waitSignal(table.sig_dispatch_selected) as signal:  # a click selects and says so
        table.selectRow(table.visible_dispatches().index(chosen))
    assert signal.args == [chosen]
    table.set_extra_columns(("NPU",), {chosen: ("NPU",)})
    table.set_marks({chosen: ("Substituted executable: x.vmfb", True)})
    table.set_index(truth.index, truth.op_types)
    table.sortByColumn(table.column("FLOPs"), Desc)
    assert table.selected_dispatch() == chosen
    row = table.visible_dispatches().index(chosen)
    assert table.item(row, 0).text() == f"#{chosen} ⇄"
    assert table.item(row, 0).toolTip() == "Substituted executable: x.vmfb"
    assert table.item(row, 0).foreground().color() == QtGui.QColor(BADGE_ALERT)
    other = next(d for d in truth.kind if truth.kind[d] != truth.kind[chosen])
    table.set_filter(kind=truth.kind[other])  # the selected row filtered out, then back
    assert table.selected_dispatch() is None
    table.set_filter()
    assert table.selected_dispatch() == chosen
    assert table.select_dispatch(-1) is False and table.selected_dispatch() is None


def test_keyboard_moves_the_selection_through_the_sorted_rows(table, truth, qtbot):
    shown = table.visible_dispatches()
    table.select_dispatch(shown[10])
    table.setFocus()
    with qtbot.waitSignal(table.sig_dispatch_selected) as signal:
        qtbot.keyClick(table, QtCore.Qt.Key.Key_Down)
    assert signal.args == [shown[11]] and table.selected_dispatch() == shown[11]


def test_the_frozen_columns_follow_the_tables_widths(table):
    table.setColumnWidth(1, table.columnWidth(1) + 37)
    assert table.frozen.columnWidth(1) == table.columnWidth(1)
    assert table.frozen.width() == table.columnWidth(0) + table.columnWidth(1)
