"""No parse of a user-edited snapshot can hang.

`ir.Module.parse` of a broken module (a deleted `linalg.yield` or
`flow.return`, a -1 in `sizes`, an empty affine map result) deadlocks now and
then when MLIR's thread pool is on. The race is rare per parse, so each kind
of broken snapshot (two different edits each, made here from the example's
flow snapshot) is parsed many times through every entry point the CLI uses,
in a child process under a hard timeout. Each parse must end with the
project's one-line error.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from ..conftest import REPO

ATTEMPTS = 25  # per edit and entry point: the unguarded parse hung within 20 in most runs here

DRIVER = r"""
import json, sys
from pathlib import Path
from npu_studio.core.errors import StudioError
from npu_studio.core.ir.mlir_text import parse_module
from npu_studio.core.npu.plan.passes import run_npu_pipeline

paths, attempts = [Path(p) for p in sys.argv[2:]], int(sys.argv[1])
outcome = {}
for path in paths:
    text = path.read_text()
    messages = set()
    for _ in range(attempts):
        for parse in (lambda: parse_module(text, path), lambda: run_npu_pipeline(path)):
            try:
                parse()
                messages.add("parsed")
            except StudioError as exc:
                messages.add(str(exc))
    outcome[path.name] = sorted(messages)
print(json.dumps(outcome))
"""


def _lines(text: str, needle: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(keepends=True)) if needle in line]


def broken_snapshots(text: str) -> dict[str, str]:
    """Two edits of each kind, at different places of the snapshot."""
    lines = text.splitlines(keepends=True)

    def without(i):
        return "".join(lines[:i] + lines[i + 1:])

    yields, returns = _lines(text, "linalg.yield"), _lines(text, "flow.return")
    sizes = [m for m in re.finditer(r"sizes = \[(\d+)", text)]
    maps = [m for m in re.finditer(r"-> \(([^()]*)\)>", text)]
    assert len(yields) >= 2 and returns and len(sizes) >= 2 and len(maps) >= 2

    def replaced(match, group, new):
        return text[:match.start(group)] + new + text[match.end(group):]

    return {
        "no-first-yield.mlir": without(yields[0]),
        "no-last-yield.mlir": without(yields[-1]),
        "no-return.mlir": without(returns[0]),
        "no-return-nor-yield.mlir": "".join(l for i, l in enumerate(lines) if i not in (returns[0], yields[-1])),
        "negative-size-first.mlir": replaced(sizes[0], 1, "-1"),
        "negative-size-last.mlir": replaced(sizes[-1], 1, "-1"),
        "empty-map-first.mlir": replaced(maps[0], 1, ""),
        "empty-map-last.mlir": replaced(maps[-1], 1, ""),
    }


@pytest.mark.parametrize("group", [0, 1], ids=["yield-and-return", "sizes-and-maps"])
def test_broken_snapshots_never_hang_and_give_one_line(group, example_workspace, tmp_path):
    flow = example_workspace.snapshot_path("flow").read_text()
    cases = list(broken_snapshots(flow).items())[group * 4:(group + 1) * 4]
    paths = []
    for name, text in cases:
        assert text != flow
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    try:
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(ATTEMPTS), *paths], capture_output=True,
                              text=True, timeout=240, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("a parse of a broken snapshot hung")
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads(proc.stdout)
    for name, _ in cases:
        messages = outcome[name]
        assert "parsed" not in messages, name
        assert messages and all(name in m and "\n" not in m for m in messages), messages


def test_every_mlir_context_has_multithreading_off():
    """A context made anywhere else than core/ir/context.py must turn the thread pool off on its next line,
    or parse nothing (the pass pipeline printed for its name)."""
    strays = []
    for path in sorted((REPO / "npu_studio").rglob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "ir.Context()" not in line or path.name == "context.py":
                continue
            following = lines[i + 1] if i + 1 < len(lines) else ""
            prints_pipeline = "build_pass_manager" in following
            if "enable_multithreading(False)" not in following and not prints_pipeline:
                strays.append(f"{path.relative_to(REPO)}:{i + 1}")
    assert strays == []
