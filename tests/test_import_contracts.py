"""The layering contracts in pyproject.toml ([tool.importlinter]), checked with import-linter, and no import cycles."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(config: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([str(LINT_IMPORTS), "--config", str(config), "--no-cache"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_layers_hold_the_core_has_no_qt_and_the_cli_no_gui():
    proc = lint_imports(REPO / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 6 kept, 0 broken." in proc.stdout


def import_cycles(package: str) -> list[list[str]]:
    """Strongly connected components of more than one module in the package's import graph (grimp's,
    which counts imports inside functions and under TYPE_CHECKING too)."""
    import grimp

    graph = grimp.build_graph(package)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def connect(v: str) -> None:  # Tarjan's algorithm, iterative over each node's successors
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for v in sorted(graph.modules):
        if v not in index:
            connect(v)
    return cycles


def test_the_import_graph_has_no_cycles():
    assert import_cycles("npu_studio") == []


def test_a_cycle_is_found(tmp_path, monkeypatch):
    # The same check on a package made here with a known cycle a -> b -> c -> a beside an acyclic d -> a.
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\ndef g(): pass\n")
    (pkg / "d.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyclic_pkg") == [["cyclic_pkg.a", "cyclic_pkg.b", "cyclic_pkg.c"]]


def test_a_broken_contract_is_reported(tmp_path):
    # The same tool on a contract the code breaks (the GUI imports Qt): proves the check looks at real imports.
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["npu_studio"]\ninclude_external_packages = true\n'
        '[[tool.importlinter.contracts]]\nname = "ui without Qt"\ntype = "forbidden"\n'
        'source_modules = ["npu_studio.ui"]\nforbidden_modules = ["PySide6"]\n')
    proc = lint_imports(config)
    assert proc.returncode == 1 and "ui without Qt BROKEN" in proc.stdout, proc.stdout + proc.stderr
