"""Every dependency pyproject.toml declares (runtime and test extras) is installed in a matching version.

A missing one fails here, by name, instead of silently skipping the tests that need it.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = project["dependencies"] + project["optional-dependencies"]["test"]
    return [Requirement(n) for n in names]


def test_every_declared_dependency_is_installed():
    problems = []
    for req in declared():
        if req.marker is not None and not req.marker.evaluate({"extra": "test"}):
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{req}: not installed")
            continue
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req}: {version} installed")
    assert not problems, "; ".join(problems)
    assert len(declared()) >= 10
