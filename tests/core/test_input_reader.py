"""Every command that takes --input reads it through one reader (run/signature.read_npy_input):
a FIFO named x.npy, a header claiming 1x3x500000x500000 float32 and an .npz archive named .npy
are each one line naming the file, exit code 2, at once (no wait on the FIFO, no allocation),
and the workspace is left as it was.

Truths: the kernel's FIFO (open() on it blocks without a writer), numpy's own .npz writer, the
size numpy's header format claims.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from npu_studio.cli import main
from npu_studio.core.executables.catalog import list_executables
from npu_studio.core.workspace.workspace import Workspace


def _fifo(t: Path) -> Path:
    path = t / "x.npy"
    os.mkfifo(path)
    return path


def _huge_header(t: Path) -> Path:
    path = t / "x.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (1, 3, 500_000, 500_000)})
        f.write(b"\0" * 64)
    return path


def _npz(t: Path) -> Path:
    np.savez(t / "x.npz", a=np.zeros((1, 3, 4, 4), np.float32))
    return (t / "x.npz").rename(t / "x.npy")


INPUTS = {"fifo": (_fifo, "not a regular file"), "huge-header": (_huge_header, "wants shape"),
          "npz": (_npz, "is an .npz archive")}


def _commands(ws: Path, x: Path, edited: Path, name: str) -> dict[str, list[str]]:
    return {
        "run": ["run", str(ws), "--input", str(x)],
        "trace": ["trace", str(ws), "--input", str(x)],
        "precision": ["precision", str(ws), "--demote", "f16", "--input", str(x)],
        "compare": ["compare", str(ws), "main", "main", "--input", str(x)],
        "simulate --check": ["simulate", str(ws), "--check", "--input", str(x)],
        "profile --tracy": ["profile", str(ws), "--tracy", "--input", str(x)],
        "substitute": ["substitute", str(ws), "--executable", name, "--source", str(edited), "--input", str(x)],
    }


class _Hung(Exception):
    pass


@pytest.fixture(scope="module")
def ws_copy(example_workspace, tmp_path_factory):
    dest = tmp_path_factory.mktemp("inputs") / "ws"
    shutil.copytree(example_workspace.root, dest)
    return dest


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("command", ["run", "trace", "precision", "compare", "simulate --check",
                                     "profile --tracy", "substitute"])
def test_a_bad_input_file_is_one_line_on_every_command(ws_copy, tmp_path, capsys, command, kind):
    make, reason = INPUTS[kind]
    x = make(tmp_path)
    [info] = list_executables(Workspace.open(ws_copy))
    edited = tmp_path / "edited.mlir"
    edited.write_text(info.source.read_text())
    before = _tree(ws_copy)

    def hung(*_):
        raise _Hung()

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    start = time.monotonic()
    try:
        code = main(_commands(ws_copy, x, edited, info.name)[command])
    except _Hung:
        pytest.fail(f"{command} blocked on {kind}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"npu-studio: error: {x}: ") and reason in lines[0], lines[0]
    assert time.monotonic() - start < 30
    after = _tree(ws_copy)
    # a workspace-side cache may appear (read-only commands index once); nothing that was there changes
    assert {k: v for k, v in after.items() if k in before} == before
