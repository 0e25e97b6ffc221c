"""Every third-party module the product imports (at the top of a module or inside a function) comes
from a runtime dependency in pyproject.toml, never only from the `test` extra: a plain `pip install`
must be complete. The import statements are read from the source (AST), so a lazy import counts too.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "npu_studio"


def imported_top_levels_of(package: Path) -> dict[str, Path]:
    """top-level module name -> one file that imports it, for absolute imports in the package."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], path)
    return found


def runtime_requirements() -> list[Requirement]:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [Requirement(d) for d in deps]


def with_their_requirements(requirements: list[Requirement]) -> set[str]:
    """The distributions these requirements install, extras included, and everything those require."""
    seen, todo = set(), [(canonicalize_name(r.name), frozenset(r.extras)) for r in requirements]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def test_every_imported_third_party_module_is_a_runtime_dependency():
    providers = metadata.packages_distributions()
    installed = with_their_requirements(runtime_requirements())
    missing = []
    for module, where in imported_top_levels_of(PACKAGE).items():
        if module in sys.stdlib_module_names or module in ("npu_studio", "__future__"):
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & installed:
            missing.append(f"{module} (imported by {where.relative_to(REPO)}; from {sorted(dists) or 'no installed distribution'})")
    assert not missing, "not a runtime dependency: " + "; ".join(missing)


def test_the_check_sees_an_import_inside_a_function_and_test_tools_are_not_runtime(tmp_path):
    (tmp_path / "mod.py").write_text("def f():\n    import pytest\n    from hypothesis import given\n")
    assert set(imported_top_levels_of(tmp_path)) == {"pytest", "hypothesis"}
    runtime = with_their_requirements(runtime_requirements())
    assert "pytest" not in runtime and "hypothesis" not in runtime and "onnxruntime" in runtime
