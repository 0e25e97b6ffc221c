"""FIFOs, devices and sockets where a command expects a file: one line naming the file, exit 2, within
seconds, and the special file left as it was (never waited on, read without end, or replaced).

Every command runs as a child process with a time limit: a FIFO opened for reading or writing would
block it until the limit, /dev/zero read whole would end in a MemoryError after seconds. The truth
is the file system (os.stat: still a FIFO) and the child's exit code, stderr and time.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npu_studio.cli import main

from ..conftest import EXAMPLE

NOT_REGULAR = "not a regular file"


def cli(*args, cwd=None):
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "npu_studio", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    return proc, time.monotonic() - start


def one_line(proc, seconds: float, *words) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    assert seconds < 20, seconds
    for word in words:
        assert str(word) in lines[0], (word, lines[0])
    return lines[0]


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def still_a_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.fixture
def ws(fresh_example):
    return fresh_example.root


# -- inside a workspace ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["manifest.json", "phases/06.flow.mlir"])
@pytest.mark.parametrize("command", [["dispatches"], ["npu"], ["diff", "flow", "stream"]])
def test_a_fifo_in_a_workspace_is_refused_when_it_opens(ws, name, command):
    special = fifo(ws / name)
    proc, seconds = cli(command[0], ws, *command[1:])
    one_line(proc, seconds, special, NOT_REGULAR)
    assert still_a_fifo(special)


SWEEP = 'target = "{target}"\nmodels = ["{model}"]\n[parameters]\n"sram.size_kib" = [32, 64]\n'


def sweep(tmp_path: Path, *, target: str = "default", model) -> tuple:
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP.format(target=target, model=model))
    return cli("sweep", spec, "--jobs", "1", "--out", tmp_path / "out")


def test_a_sweep_over_a_workspace_with_a_fifo_snapshot_is_one_line(ws, tmp_path):
    special = fifo(ws / "phases" / "06.flow.mlir")
    one_line(*sweep(tmp_path, model=ws), special, NOT_REGULAR)
    assert still_a_fifo(special)


# -- files the user names ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_target_file_that_is_not_regular_is_one_line(ws, tmp_path, kind):
    target = fifo(tmp_path / "t.toml") if kind == "fifo" else Path(kind)
    for command in (["npu", ws, "--target", target], ["simulate", ws, "--target", target]):
        one_line(*cli(*command), target, NOT_REGULAR)
    one_line(*sweep(tmp_path, target=target, model=ws), "s.toml", "target", NOT_REGULAR)


def test_a_target_file_larger_than_any_target_is_refused_unread(ws, tmp_path):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(64 << 30)  # 64 GiB of nothing: a sparse file, read whole it would exhaust memory
    one_line(*cli("npu", ws, "--target", big), big, "larger than")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_substitute_source_that_is_not_regular_is_one_line(ws, tmp_path, kind):
    source = fifo(tmp_path / "edited.mlir") if kind == "fifo" else Path(kind)
    before = (ws / "manifest.json").read_bytes()
    proc, seconds = cli("substitute", ws, "--executable", "SingleConv$async_dispatch_0", "--source", source)
    one_line(proc, seconds, source, NOT_REGULAR)
    assert (ws / "manifest.json").read_bytes() == before


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_model_or_snapshot_that_is_not_regular_says_so_never_no_such_file(ws, tmp_path, kind):
    special = fifo(tmp_path / "m.onnx") if kind == "fifo" else Path(kind)
    lines = [one_line(*cli("compile", special, "--workspace", tmp_path / "new"), special, NOT_REGULAR),
             one_line(*cli("resume", special, "--from", "flow", "--workspace", ws), special, NOT_REGULAR),
             one_line(*sweep(tmp_path, model=special), NOT_REGULAR)]
    assert not any("no such file" in line for line in lines)
    assert not (tmp_path / "new").exists()


# -- outputs --------------------------------------------------------------------------------------


def unix_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_kept(ws, tmp_path, kind):
    keep = []
    program = tmp_path / "prog.json"
    assert cli("npu", ws, "--json", program)[0].returncode == 0
    commands = [("diff", ws, "flow", "stream", "-o", "{out}"), ("simulate", ws, "--json", "{out}"),
                ("simulate", program, "--csv", "{out}"), ("simulate", program, "--trace", "{out}"),
                ("npu", ws, "--json", "{out}"), ("npu", ws, "--mlir", "{out}")]
    for i, command in enumerate(commands):
        out = tmp_path / f"out{i}"
        if kind == "fifo":
            fifo(out)
        else:
            keep.append(unix_socket(out))
        proc, seconds = cli(*[str(a).format(out=out) for a in command])
        one_line(proc, seconds, out, NOT_REGULAR)
        assert stat.S_ISFIFO(os.lstat(out).st_mode) or stat.S_ISSOCK(os.lstat(out).st_mode)
    for sock in keep:
        sock.close()


def test_run_never_writes_an_output_into_a_fifo(ws, tmp_path):
    special = fifo(tmp_path / "outs" / "output0.npy")
    proc, seconds = cli("run", ws, "--output-dir", tmp_path / "outs")
    one_line(proc, seconds, special, NOT_REGULAR)
    assert still_a_fifo(special)


def test_a_full_disk_names_the_output_being_written(ws, tmp_path, monkeypatch, capsys):
    """ENOSPC on the output (the file system's answer, raised where the data reaches the disk) is
    reported against that file, never against the workspace or the program read."""
    program = tmp_path / "prog.json"
    assert main(["npu", str(ws), "--json", str(program)]) == 0
    capsys.readouterr()
    out = tmp_path / "result.json"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    assert main(["simulate", str(program), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"npu-studio: error: {out}: cannot write: No space left on device"), err
    assert len(err.splitlines()) == 1 and not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".result.json")]  # no temporary left


def test_a_regular_output_still_follows_the_users_link(ws, tmp_path):
    real = tmp_path / "shared" / "diff.txt"
    real.parent.mkdir()
    real.write_text("old")
    (tmp_path / "diff.txt").symlink_to(real)
    proc, _ = cli("diff", ws, "flow", "stream", "-o", tmp_path / "diff.txt")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "diff.txt").is_symlink() and real.read_text().startswith("---")


def test_compile_of_the_example_still_works_next_to_special_files(tmp_path):
    fifo(tmp_path / "m" / "other.fifo")  # a FIFO beside the model is no part of it
    shutil.copy(EXAMPLE, tmp_path / "m" / EXAMPLE.name)
    proc, _ = cli("compile", tmp_path / "m" / EXAMPLE.name, "--workspace", tmp_path / "w")
    assert proc.returncode == 0, proc.stderr
