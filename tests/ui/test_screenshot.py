"""`npu-studio --screenshot`: a PNG of the window at the size asked for, and one-line errors for bad arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtGui

REPO = Path(__file__).resolve().parents[2]


def run_app(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return subprocess.run([sys.executable, "-m", "npu_studio", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_screenshot_of_a_workspace_at_1280x800_with_every_dock(example_workspace, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    before = sorted(p.relative_to(ws) for p in ws.rglob("*"))
    out = tmp_path / "shot.png"
    done = run_app("--screenshot", str(out), "--size", "1280x800", "--all-docks", "--phase", "flow",
                   "--select-dispatch", "0", str(ws), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    image = QtGui.QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    # Not a blank grab: the IR view, tables and chart give many colours.
    colours = {image.pixel(x, y) for x in range(0, 1280, 16) for y in range(0, 800, 16)}
    assert len(colours) > 20
    # Reopening a workspace compiles nothing: its files are as they were (no new build). The NPU
    # results and the graph's layout cache (graph/) may be written: they are derived, not a build.
    derived = ("npu", "graph")
    assert sorted(p.relative_to(ws) for p in ws.rglob("*") if not set(derived) & set(p.parts)) == \
        [p for p in before if not set(derived) & set(p.parts)]


@pytest.mark.parametrize("args, message", [
    (["--screenshot", "out.png", "--size", "big", "{ex}"], "--size big: expected WIDTHxHEIGHT"),
    (["--screenshot", "out.jpg", "{ex}"], "out.jpg: --screenshot writes a PNG"),
    (["--screenshot", "out.png"], "--screenshot needs exactly one model or workspace"),
    (["--all-docks", "{ex}"], "--all-docks, --raise-dock, --phase and --select-dispatch go with --screenshot"),
    (["--screenshot", "nowhere/out.png", "{ex}"], "no such folder"),
])
def test_bad_screenshot_arguments_are_one_line_and_exit_2(tmp_path, args, message):
    from tests.conftest import EXAMPLE

    done = run_app(*[a.replace("{ex}", str(EXAMPLE)) for a in args], cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_phase_the_workspace_lacks_is_refused(example_workspace, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    done = run_app("--screenshot", str(tmp_path / "x.png"), "--phase", "nonsense", str(ws), cwd=tmp_path)
    assert done.returncode == 2 and "--phase nonsense: no such phase" in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_a_workspace_with_a_recorded_profile_reopens(example_workspace, tmp_path):
    # A recorded profile restores into a sorted table; its items once recursed in __lt__ (exit 139).
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    recorded = subprocess.run([sys.executable, "-m", "npu_studio.cli", "profile", str(ws)], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=600)
    assert recorded.returncode == 0, recorded.stderr
    assert (ws / "profiles").is_dir()
    out = tmp_path / "shot.png"
    done = run_app("--screenshot", str(out), "--size", "1280x800", "--all-docks", str(ws), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert QtGui.QImage(str(out)).width() == 1280


def test_value_sorted_items_sort_mixed_values_without_recursing():
    from PySide6 import QtWidgets

    from npu_studio.ui.sort_items import VALUE_ROLE, ValueSortTableItem

    _app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    table = QtWidgets.QTableWidget(5, 1)
    for row, (text, value) in enumerate([("b", "b"), ("10", 10), ("a", None), ("2", 2.0), ("c", "c")]):
        item = ValueSortTableItem(text)
        item.setData(VALUE_ROLE, value)
        table.setItem(row, 0, item)
    table.sortItems(0)
    assert [table.item(r, 0).text() for r in range(5)] == ["2", "10", "b", "c", "a"]


def test_the_raised_dock_is_the_one_on_show_with_every_dock_open(example_workspace, tmp_path):
    # Opening a model brings the Executables tab forward, and Qt's raise_() of the main window's last
    # child (the graph dock, raised before the model opened) changed nothing: the shot showed Executables.
    from npu_studio.core.graph.style import TERMINAL

    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    out = tmp_path / "shot.png"
    done = run_app("--screenshot", str(out), "--size", "1280x800", "--all-docks", "--raise-dock", "graph_dock",
                   str(ws), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    image = QtGui.QImage(str(out))
    input_fill = QtGui.QColor(TERMINAL["input"]).rgb()  # the graph opens centred on the model's input
    assert any(image.pixel(x, y) == input_fill for x in range(0, 1280, 2) for y in range(0, 800, 2))
