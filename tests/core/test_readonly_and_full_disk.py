"""A read-only workspace and a full disk: reading commands work, writing ones say so in one line,
and nothing published before changes. Also damaged records inside a workspace (one line naming the
record, or a cache recomputed).

The read-only and full file systems are real: a tmpfs mounted for the test (root only; skipped
elsewhere), remounted read-only, or filled to its last byte.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from npu_studio.cli import main
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.workspace.workspace import Workspace


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_a_read_only_workspace_runs_and_refuses_writes_in_one_line(example_workspace, tmpfs, capsys):
    ws = tmpfs / "ws"
    shutil.copytree(example_workspace.root, ws)
    [info] = list_executables(Workspace.open(ws))
    before = _tree(ws)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    assert main(["run", str(ws)]) == 0  # IREE cannot map the module read-write: it is read instead
    assert "output0: float32" in capsys.readouterr().out
    assert main(["compare", str(ws), "main", "main"]) == 0
    assert "no difference" in capsys.readouterr().out
    for argv in (["profile", str(ws)], ["trace", str(ws)], ["passes", str(ws), "flow"],
                 ["substitute", str(ws), "--executable", info.name, "--source", str(info.source)],
                 ["precision", str(ws), "--demote", "f16"]):
        assert main(argv) == 2, argv
        line = _one_line(capsys)
        assert line.startswith(f"npu-studio: error: {ws}") and "Read-only file system" in line, line
    assert _tree(ws) == before


def test_a_full_disk_during_substitute_is_one_line_and_keeps_the_previous_state(example_workspace, tmpfs,
                                                                                capsys, tmp_path):
    ws = tmpfs / "ws"
    shutil.copytree(example_workspace.root, ws)
    [info] = list_executables(Workspace.open(ws))
    edited = tmp_path / "edited.mlir"
    edited.write_text(info.source.read_text())
    before = _tree(ws)
    fd = os.open(tmpfs / "filler", os.O_WRONLY | os.O_CREAT)  # the disk full to its last byte
    for size in (1 << 16, 1):
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)
    assert main(["substitute", str(ws), "--executable", info.name, "--source", str(edited)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"npu-studio: error: {ws}") and "No space left on device" in line, line
    assert "the previous state is kept" in line
    assert _tree(ws) == before


@pytest.mark.parametrize("damage, reason", [
    ('{"phases": [], "build": "main", "build_stamp": "x"}', "not a compile profile (phases: expected an object"),
    ("folder", "is a folder where the compile profile is kept"),
    ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
])
def test_a_damaged_profile_record_is_one_line(example_workspace, tmp_path, capsys, damage, reason):
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    record = ws / "profiles" / "main.json"
    record.parent.mkdir(exist_ok=True)
    record.mkdir() if damage == "folder" else record.write_text(damage)
    assert main(["profile", str(ws)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"npu-studio: error: {record}: ") and reason in line, line
    assert record.is_dir() if damage == "folder" else record.read_text() == damage  # never replaced silently


@pytest.mark.parametrize("damage", ["[]", "[" * 10_000 + "]" * 10_000, '{"version": 1, "passes": 3}'])
def test_a_damaged_pass_trace_index_is_traced_again(example_workspace, tmp_path, capsys, damage):
    ws = tmp_path / "ws"
    shutil.copytree(example_workspace.root, ws)
    index = ws / "passes" / "flow" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text(damage)
    assert main(["passes", str(ws), "flow"]) == 0
    assert " passes (" in capsys.readouterr().out
    assert isinstance(__import__("json").loads(index.read_text()), dict)  # the trace made again
