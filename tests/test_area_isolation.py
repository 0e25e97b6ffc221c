"""The UI areas are built against the narrow shell (npu_studio/ui/shell.py), never the main window.

import-linter forbids an area to import the main window module; this test catches what it cannot
see: an area handed the window object and reaching into it (`window.status_label`,
`getattr(window, "executables")`), or building a dock from a QMainWindow.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

UI = Path(__file__).resolve().parents[1] / "npu_studio" / "ui"
AREAS = sorted(p for p in UI.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
WINDOW_NAMES = {"window", "main_window", "MainWindow", "QMainWindow"}


def window_uses(source: str) -> list[str]:
    """Every place `source` names the window: as a name, an argument, an attribute or a string."""
    found = [f"{n}: {m.group()}" for n, line in enumerate(source.splitlines(), 1)
             for m in re.finditer(r"\bwindow\.\w+", line)]
    for node in ast.walk(ast.parse(source)):
        name = (node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg)
                else node.attr if isinstance(node, ast.Attribute) else None)
        if name in WINDOW_NAMES:
            found.append(f"{node.lineno}: {name}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and node.args \
                and isinstance(node.args[0], ast.Attribute) and node.args[0].attr in WINDOW_NAMES:
            found.append(f"{node.lineno}: getattr on the window")
    return found


def test_every_area_package_is_found():
    names = {p.name for p in AREAS}
    assert {"edit", "dispatches", "executables", "npu", "schedule", "compile_debug", "sweep", "trace",
            "module", "assembly"} <= names


@pytest.mark.parametrize("area", AREAS, ids=lambda p: p.name)
def test_an_area_never_names_the_main_window(area: Path):
    uses = {f"{path.relative_to(UI)}:{use}" for path in sorted(area.rglob("*.py"))
            for use in window_uses(path.read_text(encoding="utf-8"))}
    assert not uses, "areas are built from (session, studio, shell); these reach into the window:\n" + "\n".join(
        sorted(uses))


def test_the_check_sees_each_way_of_reaching_into_the_window():
    """The check itself fails on the shapes it is there to catch (and not on the shell)."""
    assert window_uses("self.window.status_label.setText('x')")
    assert window_uses("def __init__(self, window):\n    pass")
    assert window_uses("x = getattr(self.window, 'executables', None)")
    assert window_uses("def f(w: QtWidgets.QMainWindow): pass")
    assert not window_uses("def __init__(self, session, studio, shell):\n    shell.set_status('x')")
