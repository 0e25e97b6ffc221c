"""The Assembly dock in the real main window: the listing `npu-studio asm` prints, linked both ways
to the schedule chart and the IR, stale with its program, and a second backend's own assembly."""

from __future__ import annotations

import os
import re
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore

from tests.conftest import REPO

from .test_npu_in_app import WAIT, make_window, open_workspace
from .test_schedule_in_app import window  # noqa: F401 - the example open and simulated in the real window

TAG = re.compile(r"^d(\d+)\.t(\d+)\s")  # the generic listing's tag column (docs/npu-isa.md)


def _cli(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "npu_studio.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _open_dock(window, qtbot):
    dock = window.assembly_dock
    dock.show()
    dock.raise_()
    qtbot.waitUntil(lambda: dock.model is not None and window.assembly.shown is window.session.npu.program,
                    timeout=WAIT)
    return dock


def _click_line(view, qtbot, line: int) -> None:
    view.go_to_line(line)
    block = view.textCursor().block()
    top = view.blockBoundingGeometry(block).translated(view.contentOffset()).top()
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=QtCore.QPoint(40, int(top) + view.fontMetrics().height() // 2))


def test_listing_is_the_cli_s_and_links_both_ways(window, qtbot):
    assert not window.assembly_dock.isVisible()  # closed by default, listed in the View menu
    assert "Assembly" in [a.text() for a in window.view_menu.actions()]
    assert window.assembly.shown is None  # a closed dock emits nothing
    dock = _open_dock(window, qtbot)
    view, session, chart = dock.view, window.session, window.schedule.chart
    cli_text = _cli("asm", str(window.workspace.root))
    assert view.text() == cli_text

    # a click on an instruction selects its task and dispatch, as the listing's tag column names them
    lines = cli_text.splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.split()[1:2] == ["mac.tile"] and TAG.match(text)
                and int(TAG.match(text).group(2)) > 3)
    dispatch, task = map(int, TAG.match(lines[line - 1]).groups())
    _click_line(view, qtbot, line)
    assert (session.selection.dispatch, session.selection.task) == (dispatch, task)
    assert chart.selected_task == task
    assert window.dispatch_table.selected_dispatch() == dispatch and window.ir_view.marked_key() == dispatch
    assert line in view.task_lines and view.current_line() == line

    # a task picked on the chart: the listing's cursor goes to one of its instructions
    other = max(t.id for t in session.npu.program.tasks_of(dispatch))
    view.go_to_line(1)
    chart.sig_task_clicked.emit(other)
    assert session.selection.task == other
    m = TAG.match(lines[view.current_line() - 1])
    assert m is not None and (int(m.group(1)), int(m.group(2))) == (dispatch, other)
    top, bottom = view.visible_line_range()
    assert top <= view.current_line() <= bottom

    # "selected dispatch only": that dispatch's lines alone, still linked by the listing's line numbers
    dock.only_selected.setChecked(True)
    assert view.text().splitlines() == [t for t in lines if re.match(rf"d{dispatch}[ .]", t)]
    assert TAG.match(lines[view.current_line() - 1]).group(2) == str(other)  # the cursor stayed on its task
    _click_line(view, qtbot, line)
    assert session.selection.task == task and view.current_line() == line
    dock.only_selected.setChecked(False)
    assert view.text() == cli_text and view.current_line() == line


def test_stale_program_shows_stale(window, qtbot):
    dock = _open_dock(window, qtbot)
    listing = dock.view.text()
    window.session.set_draft("flow", window.session.phase_view("flow").text + "\n")  # flow edited: stale
    qtbot.waitUntil(dock.is_stale, timeout=5000)
    assert dock.view.text() == listing  # the previous program's listing stays on show, marked


def test_toy_backend_shows_its_own_assembly(qtbot, tmp_path, fresh_example):
    from npu_studio.core.npu.store import workspace_io

    workspace_io.run_for_workspace(fresh_example, backend="toy")  # the workspace records the toy NPU
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = make_window(qtbot, settings)
    try:
        open_workspace(w, qtbot, fresh_example)
        assert w.session.npu.program.target.backend == "toy"
        dock = _open_dock(w, qtbot)
        # the toy package itself, in another process, on the program the app wrote
        json = workspace_io.json_path(w.workspace)
        expected = subprocess.run(
            [sys.executable, "-c", "import sys; from toy_npu.backend import emit; "
             "from npu_studio.core.npu.store.sim_store import load_program; "
             "sys.stdout.write(emit(load_program(sys.argv[1])).assembly)", str(json)],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
        assert expected.returncode == 0, expected.stderr
        assert dock.view.text() == expected.stdout and expected.stdout.startswith(("TILE ", "MOVE "))
        assert dock.model.backend == "toy" and "toy:" in dock.heading.full_text()
        line = 3
        _click_line(dock.view, qtbot, line)
        d, t = map(int, re.search(r"\bd(\d+) t(\d+)\b", expected.stdout.splitlines()[line - 1]).groups())
        assert (w.session.selection.dispatch, w.session.selection.task) == (d, t)
    finally:
        w.jobs.stop_all()


def test_a_backend_without_an_emitter_says_so_in_the_view(window, qtbot, monkeypatch):
    import dataclasses

    from npu_studio.core.npu.backend import registry

    monkeypatch.setitem(registry._loaded, "generic", dataclasses.replace(registry.load("generic"), emit=None))
    dock = _open_dock(window, qtbot)
    assert dock.view.text() == "The NPU backend 'generic' has no emitter: it shows no assembly."
    window.session.select_task(window.session.npu.program.tasks[0].id)  # nothing to mark, nothing breaks
    assert dock.view.current_line() == 1


def test_listing_is_coloured_on_screen_only_from_its_first_line(qtbot):
    from npu_studio.core.npu.backend.api import Emitted, EmittedLine
    from npu_studio.core.npu.report.assembly_model import index_emitted
    from npu_studio.ui.assembly.dock import AssemblyDock

    dock = AssemblyDock()
    qtbot.addWidget(dock)
    dock.resize(800, 400)
    dock.show()
    qtbot.waitExposed(dock)
    count = 20_000
    text = "".join(f"TILE d0 t{i} at [0, {i}] size [8]  ; 12 cycles\n" for i in range(count))
    dock.show_model(index_emitted("toy", Emitted(text, b"", tuple(EmittedLine(i + 1, 0, i, 16 * i, 16)
                                                                    for i in range(count)))))
    doc = dock.view.document()

    def bold_ranges(block: int) -> list[tuple[int, int]]:
        return [(r.start, r.length) for r in doc.findBlockByNumber(block).layout().formats()
                if r.format.fontWeight() == 700]

    assert bold_ranges(0) == [(0, len("TILE"))] and bold_ranges(1) == [(0, len("TILE"))]
    assert bold_ranges(count - 2) == []  # far below the screen: not lexed
    dock.view.go_to_line(count - 1)
    qtbot.waitUntil(lambda: bold_ranges(count - 2) == [(0, len("TILE"))], timeout=2000)
