"""workspace/transaction.py: the one way a writer takes, stages, publishes and leaves a workspace."""

from __future__ import annotations

import json

import pytest

from npu_studio.core.errors import WorkspaceBusy
from npu_studio.core.workspace import publish_journal
from npu_studio.core.workspace.lock import holder_pid
from npu_studio.core.workspace.transaction import Transaction, recover_if_free


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def root(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "manifest.json").write_text('{"v": 1}')
    (ws / "module.vmfb").write_bytes(b"old build")
    (ws / "old.log").write_text("old log")
    return ws


def staging_folders(root):
    return sorted(root.glob(publish_journal.STAGING_PREFIX + "*"))


def test_a_commit_publishes_the_staged_files_and_the_manifest(root):
    with Transaction(root) as txn:
        assert holder_pid(root) is not None
        (txn.staging / "module.vmfb").write_bytes(b"new build")
        txn.publish.move(txn.staging / "module.vmfb", "module.vmfb")
        txn.publish.delete("old.log")
        txn.commit('{"v": 2}')
    assert (root / "module.vmfb").read_bytes() == b"new build" and not (root / "old.log").exists()
    assert (root / "manifest.json").read_text() == '{"v": 2}'
    assert staging_folders(root) == [] and not (root / "publish.journal").exists()
    assert holder_pid(root) is None


def test_a_failure_before_the_commit_leaves_the_workspace_as_it_was(root):
    (root / ".lock").touch()  # as any earlier writer leaves it: empty
    before = tree(root)
    with pytest.raises(RuntimeError, match="compile failed"):
        with Transaction(root) as txn:
            (txn.staging / "module.vmfb").write_bytes(b"half a build")
            txn.publish.move(txn.staging / "module.vmfb", "module.vmfb")
            raise RuntimeError("compile failed")
    assert tree(root) == before
    assert staging_folders(root) == [] and holder_pid(root) is None


def test_begin_finishes_a_publish_a_dead_writer_committed(root, monkeypatch):
    staging = publish_journal.new_staging(root)
    (staging / "module.vmfb").write_bytes(b"committed build")
    publish = publish_journal.Publish(root, staging)
    publish.move(staging / "module.vmfb", "module.vmfb")
    monkeypatch.setattr(publish_journal, "apply_journal", lambda root: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # died right after the commit point
        publish.commit(json.dumps({"v": 3}))
    monkeypatch.undo()
    with Transaction(root):
        assert (root / "module.vmfb").read_bytes() == b"committed build"
        assert json.loads((root / "manifest.json").read_text()) == {"v": 3}
        assert not (root / "publish.journal").exists()


def test_a_manifest_only_change_makes_no_staging_folder(root):
    with Transaction(root) as txn:
        (root / "manifest.json").write_text('{"v": 4}')
        assert staging_folders(root) == [] and txn.begun
    assert staging_folders(root) == []


def test_a_second_writer_is_refused_while_the_first_holds_the_workspace(root):
    with Transaction(root):
        with pytest.raises(WorkspaceBusy, match="being written by process"):
            Transaction(root, wait=0.2).begin()
    with Transaction(root):  # free again
        pass


def test_staged_before_the_lock_and_the_lock_refused_nothing_is_left(root):
    with Transaction(root):
        late = Transaction(root)
        (late.stage() / "record.json").write_text("{}")  # a measurement runs without the lock
        with pytest.raises(WorkspaceBusy):
            with late:
                pass
        assert staging_folders(root) == []


def test_staged_before_the_lock_then_published(root):
    txn = Transaction(root)
    try:
        staged = txn.stage() / "record.json"
        staged.write_text('{"ms": 1}')
        txn.begin()
        txn.publish.move(staged, "profiles/record.json")
        txn.commit((root / "manifest.json").read_text())
    finally:
        txn.end()
    assert (root / "profiles" / "record.json").read_text() == '{"ms": 1}' and staging_folders(root) == []


def test_a_transaction_begun_ahead_is_ended_once_by_its_block(root):
    txn = Transaction(root).begin()  # an import staged now, published with the next compile
    (txn.staging / "imported.mlir").write_text("module {}")
    with txn:  # begin() again does nothing: same lock, same staging folder
        assert (txn.staging / "imported.mlir").is_file()
        txn.publish.move(txn.staging / "imported.mlir", "imported.mlir")
        txn.commit('{"v": 5}')
    txn.end()  # twice is harmless
    assert (root / "imported.mlir").read_text() == "module {}" and holder_pid(root) is None


def test_commit_needs_the_lock(root):
    txn = Transaction(root)
    with pytest.raises(RuntimeError, match="lock"):
        txn.commit("{}")
    txn.end()
    assert staging_folders(root) == []


def test_recover_if_free_leaves_a_busy_workspace_alone(root):
    with Transaction(root):
        (root / f"{publish_journal.STAGING_PREFIX}999999999-x").mkdir()  # a dead writer's leftover
        recover_if_free(root)  # busy: nothing is done, nothing raised
        assert len(staging_folders(root)) == 1
    recover_if_free(root)
    assert staging_folders(root) == []
