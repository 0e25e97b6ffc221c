"""requirements/venv.lock (what `make run` and `make test` install) satisfies pyproject.toml.

Every requirement of the project, its test extra and its build system has exactly one locked
version inside its specifier; every locked package carries a sha256 hash; nothing is left
unpinned. `make lock` regenerates the file after pyproject.toml changes.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "venv.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def locked_versions(text: str) -> dict[str, Version]:
    """name -> version of every `name==version` line; a requirement line that is not an exact pin fails."""
    pins: dict[str, Version] = {}
    for line in text.splitlines():
        if not line or line[0] in "# \t":
            continue
        match = PIN.match(line)
        assert match, f"{LOCK.name}: not an exact pin: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"{LOCK.name}: {name} pinned twice"
        pins[name] = Version(match.group(2))
    return pins


def hashes_per_pin(text: str) -> dict[str, int]:
    """name -> how many --hash options its entry (the pin and its continuation lines) carries."""
    counts: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            counts[current] = 0
        if current and "--hash=sha256:" in line:
            counts[current] += line.count("--hash=sha256:")
    return counts


def project_requirements() -> list[Requirement]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    project = pyproject["project"]
    names = (project["dependencies"] + project["optional-dependencies"]["test"]
             + pyproject["build-system"]["requires"])
    return [Requirement(name) for name in names]


def lock_problems(text: str) -> list[str]:
    pins = locked_versions(text)
    problems = []
    for requirement in project_requirements():
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": "test"}):
            continue
        version = pins.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement}: not in the lock")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement}: the lock has {version}")
    return problems


def test_the_lock_satisfies_every_requirement_of_pyproject():
    problems = lock_problems(LOCK.read_text())
    assert not problems, f"{LOCK.name} is stale (run `make lock`): " + "; ".join(problems)


def test_every_locked_package_is_pinned_with_hashes():
    text = LOCK.read_text()
    counts = hashes_per_pin(text)
    assert len(counts) >= 20
    assert [name for name, count in counts.items() if count == 0] == []
    # pip's --require-hashes mode refuses a file that mixes in an editable or an unpinned line
    assert not re.search(r"^\s*-e\s", text, re.M)


def test_the_lock_check_catches_an_excluded_version_and_a_missing_package():
    text = LOCK.read_text()
    broken = re.sub(r"^pyside6-essentials==\S+", "pyside6-essentials==6.12.0", text, flags=re.M)
    broken = re.sub(r"^onnx==\S+ \\\n(    --hash=\S+( \\)?\n)+", "", broken, flags=re.M)
    problems = lock_problems(broken)
    assert len(problems) == 2, problems
    assert "PySide6-Essentials" in problems[0] and "6.12.0" in problems[0]
    assert problems[1].startswith("onnx") and "not in the lock" in problems[1]
