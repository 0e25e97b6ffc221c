"""A trusted folder deleted and replaced by a received one at the same path does not pass on its trust,
even when the file system hands the new folder the old one's inode number (ext4 does, at once).

Truth: the file system's own inode numbers (os.stat) show when the replacement got the trusted
folder's inode; the recorded compiled module must then not run (no marker file, one line, exit 2).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from npu_studio.core.workspace import trust

from ..conftest import EXAMPLE
from .test_workspace_trust import cli, refused_in_one_line, sent, tree, user  # noqa: F401


def replace_until_inode_reused(folder: Path, make, tries: int = 20) -> bool:
    """Delete `folder` and make it again with `make(folder)` until it gets its old inode; whether it did."""
    old = os.stat(folder).st_ino
    for _ in range(tries):
        shutil.rmtree(folder)
        make(folder)
        if os.stat(folder).st_ino == old:
            return True
    return False


def test_a_folder_made_again_at_a_trusted_path_is_not_trusted(user, tmp_path):
    folder = tmp_path / "t1"
    folder.mkdir()
    trust.record_created(folder)
    assert trust.is_trusted(folder)  # the folder this install made

    reused = replace_until_inode_reused(folder, lambda f: f.mkdir())
    assert not trust.is_trusted(folder), f"inode reused: {reused}"
    trust.record_created(folder)  # made here again: trusted again
    assert trust.is_trusted(folder)


def test_a_received_workspace_copied_over_a_deleted_trusted_one_does_not_run(sent, user, tmp_path):
    _, mine, before = user
    t1 = tmp_path / "t1"
    made = cli("compile", EXAMPLE, "--workspace", t1)
    assert made.returncode == 0, made.stderr
    assert trust.is_trusted(t1)
    marker = tmp_path / "MARKER"
    # The received module stands for any native code: here a copy of the example's, run by `run`.
    reused = replace_until_inode_reused(
        t1, lambda f: subprocess.run(["cp", "-a", str(sent.root), str(f)], check=True, timeout=60))

    line = refused_in_one_line(cli("run", t1), "not created by you", "--trust")
    assert not marker.exists() and tree(mine) == before, (reused, line)
