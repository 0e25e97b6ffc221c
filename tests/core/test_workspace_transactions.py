"""Workspaces as transactions: the user's files survive everything, one writer at a time, no orphans."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from npu_studio.cli import main
from npu_studio.core.errors import CompileFailed
from npu_studio.core.workspace import publish_journal
from npu_studio.core.workspace.lock import WorkspaceLock, holder_pid
from npu_studio.core.workspace.publish_journal import Publish
from npu_studio.core.workspace.workspace import Workspace, default_workspace_for

from ..conftest import EXAMPLE, REPO
from .test_compile import _compiler_processes_under
from .test_hostile_inputs import SYNTAX_ERROR, tree

TINY_TARGET = (REPO / "resources" / "targets" / "tiny.toml").read_bytes()


def relu_model(path: Path) -> Path:
    """A one-node model: compiles in about a second."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def add_user_files(root: Path) -> dict[str, bytes]:
    """A draft, an NPU target, a substitution, a note and a model of the user's own; returns them."""
    files = {
        "edits/drafts/07.stream.mlir": b"// half-typed edit, not compiled yet\n",
        "npu/target.toml": TINY_TARGET,
        "substitutions/dispatch_0.mlir": b"// a hand-written kernel\n",
        "notes.txt": "what I tried \u2713\n".encode(),
        "mine/model.onnx": EXAMPLE.read_bytes(),
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def assert_kept(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        assert (root / rel).read_bytes() == data, f"{rel} changed"


def test_recompile_keeps_edits_drafts_target_and_substitutions(fresh_example, capsys):
    ws = fresh_example
    flow = ws.snapshot_path("flow").read_text()
    ws.resume("flow", "// my edit\n" + flow)
    edit = ws.root / ws.manifest.edits[-1]["file"]
    files = {str(edit.relative_to(ws.root)): edit.read_bytes(), **add_user_files(ws.root)}
    # Compiled from the copy the user keeps inside the workspace itself.
    assert main(["compile", str(ws.root / "mine" / "model.onnx"), "--workspace", str(ws.root)]) == 0, \
        capsys.readouterr().err
    assert_kept(ws.root, files)
    reopened = Workspace.open(ws.root)
    assert reopened.manifest.edits == ws.manifest.edits  # the history stays with the model
    assert reopened.manifest.phases["flow"].state == "done"
    assert "// my edit" not in reopened.snapshot_path("flow").read_text()  # the build was replaced


def test_failed_resume_keeps_the_text_as_a_draft_and_the_build(fresh_example):
    ws = fresh_example
    before = tree(ws.root)
    with pytest.raises(CompileFailed) as info:
        ws.resume("flow", SYNTAX_ERROR)
    draft = ws.draft_path("flow")
    # The draft holds the text the position refers to: the end of line 2, where the type is missing.
    assert (info.value.path, info.value.line, info.value.col) == (draft, 2, 27)
    assert draft.read_text() == SYNTAX_ERROR
    after = tree(ws.root)
    assert after.pop(str(draft.relative_to(ws.root))) == SYNTAX_ERROR.encode()
    assert after == before  # snapshot, manifest and build untouched
    assert ws.manifest == Workspace.open(ws.root).manifest


def test_failed_compile_over_a_good_workspace_keeps_its_build(fresh_example, tmp_path):
    before = tree(fresh_example.root)
    bad = tmp_path / "bad.mlir"
    bad.write_text(SYNTAX_ERROR)
    ws = Workspace.create(bad, fresh_example.root)
    with pytest.raises(CompileFailed):
        ws.compile()
    assert tree(fresh_example.root) == before
    assert ws.manifest.source == "source/single_conv.onnx"  # back to what is on disk
    assert not list(fresh_example.root.glob(".staging-*"))


def test_a_corrupt_model_makes_no_folder_and_the_fixed_model_compiles(tmp_path, capsys):
    model = relu_model(tmp_path / "relu.onnx")
    good = model.read_bytes()
    model.write_bytes(good[: len(good) // 2])
    assert main(["compile", str(model)]) == 2  # the default location
    assert "relu.onnx" in capsys.readouterr().err
    root = default_workspace_for(model)
    assert not root.exists()  # refused before the workspace is made
    model.write_bytes(good)
    assert main(["compile", str(model)]) == 0, capsys.readouterr().err
    assert Workspace.open(root).vmfb_path.is_file()


def test_reopening_a_model_from_the_cli_keeps_the_users_files(tmp_path, capsys):
    model = relu_model(tmp_path / "relu.onnx")
    assert main(["dispatches", str(model)]) == 0
    root = default_workspace_for(model)
    files = add_user_files(root)
    for argv in (["npu", str(model)], ["dispatches", str(model)]):  # `compile`: the first test
        assert main(argv) == 0, capsys.readouterr().err
        assert_kept(root, files)


def test_stale_staging_of_dead_processes_is_removed_on_open(fresh_example):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = fresh_example.root / f".staging-{dead.pid}-abc"
    (stale / "phases").mkdir(parents=True)
    (stale / "phases" / "x.mlir").write_text("leftover")
    live = fresh_example.root / ".staging-1-xyz"  # pid 1 is alive: its staging is in use
    live.mkdir()
    Workspace.open(fresh_example.root)
    assert not stale.exists() and live.exists()


def test_a_committed_publish_is_finished_by_the_next_open(fresh_example, monkeypatch):
    root = fresh_example.root
    staging = publish_journal.new_staging(root)
    (staging / "stderr.log").write_text("new log\n")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["total_seconds"] = 123.0
    publish = Publish(root, staging)
    publish.move(staging / "stderr.log", "stderr.log")
    monkeypatch.setattr(publish_journal, "apply_journal", lambda root: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # interrupted right after the commit point
        publish.commit(json.dumps(manifest))
    monkeypatch.undo()
    assert (root / "publish.journal").exists()
    ws = Workspace.open(root)
    assert ws.manifest.total_seconds == 123.0 and (root / "stderr.log").read_text() == "new log\n"
    assert not (root / "publish.journal").exists() and not staging.exists()


def test_a_second_writer_gets_one_line_naming_the_holder(fresh_example, capsys):
    before = tree(fresh_example.root)
    with WorkspaceLock(fresh_example.root):
        code = main(["compile", str(EXAMPLE), "--workspace", str(fresh_example.root)])
        err = capsys.readouterr().err
        with pytest.raises(Exception, match="being written by process"):
            fresh_example.resume("flow")
    assert code == 2 and len(err.splitlines()) == 1
    assert f"being written by process {os.getpid()}" in err and str(fresh_example.root) in err
    assert tree(fresh_example.root) == before


def test_a_lock_left_by_a_dead_process_is_taken_over(fresh_example):
    (fresh_example.root / ".lock").write_text("999999999\n")
    with WorkspaceLock(fresh_example.root) as lock:
        assert lock.held
        assert holder_pid(fresh_example.root) == os.getpid()  # told by the kernel, not by the file
    assert holder_pid(fresh_example.root) is None
    # nothing was written: holding the lock leaves the workspace byte-identical
    assert (fresh_example.root / ".lock").read_text() == "999999999\n"


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


SLOW_FUNCTION = """func.func @f{i}(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {{
  %c = tensor.empty() : tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}}
"""


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)],
                         ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_signal_mid_compile_leaves_no_compiler_and_the_previous_build(fresh_example, capsys, tmp_path, sig, code):
    root = fresh_example.root
    before = tree(root)
    # A module that takes iree-compile a minute, so the signal surely lands mid-compile (it costs
    # nothing: the compiler is killed within a moment).
    slow = tmp_path / "slow.mlir"
    slow.write_text("".join(SLOW_FUNCTION.format(i=i) for i in range(100)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # SIGINT as a terminal sends it: a test run started in the background inherits it ignored.
    cli = subprocess.Popen([sys.executable, "-m", "npu_studio", "compile", str(slow), "--workspace", str(root)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert _wait_for(lambda: _compiler_processes_under(root), 120), "iree-compile never started"
        if sig == signal.SIGTERM:  # while it compiles, a second writer is turned away
            assert main(["compile", str(EXAMPLE), "--workspace", str(root)]) == 2
            assert f"being written by process {cli.pid}" in capsys.readouterr().err
        cli.send_signal(sig)
        _, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == code
    if sig != signal.SIGKILL:
        assert len(err.splitlines()) == 1 and b"Traceback" not in err, err
    assert _wait_for(lambda: not _compiler_processes_under(root), 10), "iree-compile outlived the CLI"
    Workspace.open(root)  # removes what a killed writer left behind
    assert tree(root) == before
    assert not list(root.glob(".staging-*"))



@pytest.mark.parametrize("where", ["main thread", "worker thread"])
def test_a_child_dies_with_its_parent_even_on_sigkill(tmp_path, where):
    """The runtime runner and the compiler start through `start_child` (the app calls it from worker
    threads): check it on a `sleep`."""
    code = ("import sys, threading, time\nfrom npu_studio.core.processes import start_child\n"
            "def go():\n    child = start_child(['sleep', '120'])\n    print(child.pid, flush=True)\n"
            "    time.sleep(120)\n"
            + ("go()\n" if where == "main thread" else "threading.Thread(target=go).start()\n"))
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    child = int(parent.stdout.readline())
    assert _wait_for(lambda: "sleep" in Path(f"/proc/{child}/cmdline").read_text(), 10)
    # the program itself is our child: nothing sits between us
    assert int(Path(f"/proc/{child}/stat").read_text().split(") ", 1)[1].split()[1]) == parent.pid
    parent.kill()
    parent.wait()
    assert _wait_for(lambda: not Path(f"/proc/{child}").exists() or _zombie(child), 10), "the child outlived its parent"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_a_publish_under_a_relative_root_takes_staged_paths_relative_to_the_current_folder(tmp_path,
                                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    staging = publish_journal.new_staging(Path("ws"))
    (staging / "build").mkdir()
    (staging / "build" / "a.txt").write_text("via the current folder\n")
    (staging / "b.txt").write_text("via the staging folder\n")
    publish = Publish(Path("ws"), staging)
    publish.move(staging / "build" / "a.txt", "a.txt")  # e.g. ws/.staging-…/build/a.txt
    publish.move("b.txt", "b.txt")
    with pytest.raises(ValueError, match="not in the staging folder"):
        publish.move(tmp_path / "elsewhere.txt", "c.txt")
    publish.commit("{}")
    assert (tmp_path / "ws" / "a.txt").read_text() == "via the current folder\n"
    assert (tmp_path / "ws" / "b.txt").read_text() == "via the staging folder\n"


def test_a_missing_program_fails_at_start_as_popen_would(tmp_path):
    from npu_studio.core.processes import start_child

    for missing in ["no-such-tool-npu-studio", str(tmp_path / "absent")]:
        with pytest.raises(FileNotFoundError):
            start_child([missing])
    (tmp_path / "tool").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "tool").chmod(0o755)
    assert start_child(["./tool"], cwd=tmp_path).wait() == 3
    assert start_child(["tool"], env={"PATH": str(tmp_path)}).wait() == 3
