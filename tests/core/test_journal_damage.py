"""A pending publish journal in a received workspace that cannot be applied is one line naming it, and
nothing of the workspace changes (core/workspace/publish_journal.py): JSON nested 100,000 deep, a
move of a staged folder onto a folder with files, a staged file onto a folder.

Truth: the workspace's files byte for byte (`tree`) before and after the read-only `dispatches`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .test_workspace_trust import tree

STAGING = ".staging-999999-x"


def dispatches(ws_root):
    return subprocess.run([sys.executable, "-m", "npu_studio", "dispatches", str(ws_root)], capture_output=True,
                          text=True, timeout=120)


def one_line(proc, *words) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def plan(ws_root, moves) -> str:
    return json.dumps({"staging": STAGING, "moves": moves, "deletes": [],
                       "manifest": (ws_root / "manifest.json").read_text()})


@pytest.mark.parametrize("case", ["100,000 deep", "folder onto a folder with files", "file onto a folder"])
def test_a_journal_that_cannot_be_applied_is_one_line_and_changes_nothing(fresh_example, case):
    root = fresh_example.root
    staged = root / STAGING
    staged.mkdir()
    if case == "100,000 deep":
        text = "[" * 100_000 + "]" * 100_000
    elif case == "folder onto a folder with files":
        (staged / "d").mkdir()
        (staged / "d" / "x.mlir").write_text("staged")
        text = plan(root, [["d", "phases"]])
    else:
        (staged / "f").write_text("staged")
        text = plan(root, [["f", "executables"]])
    (root / "publish.journal").write_text(text)
    before = tree(root)

    line = one_line(dispatches(root), "publish.journal")
    assert tree(root) == before, line
