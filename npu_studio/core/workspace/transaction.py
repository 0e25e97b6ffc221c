"""One write to a workspace, set up in one place.

Every writer (import, compile, resume, recorded edit, build variant, NPU
variant, measured record, manifest change) goes through a `Transaction`:

    with ws.transaction() as txn:     # the lock taken, a publish a dead writer committed finished
        ...                           # files made in txn.staging (a new folder), named in txn.publish
        txn.commit(manifest_text)     # journal (the commit point), os.replace each file, manifest last

Leaving the block, committed or not, removes the staging folder and releases
the lock. Anything that fails before `commit` leaves the workspace exactly
as it was; after it, the journal is rolled forward by the next writer or
open (publish_journal.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import StudioError
from .lock import WorkspaceLock
from .publish_journal import Publish, new_staging, recover


class Transaction:
    """`begin()` locks and recovers; `commit(manifest_text)` publishes; `end()` cleans up and unlocks.

    `with` calls begin and end. The staging folder is made on first use
    (a manifest-only change needs none). A transaction may be begun ahead
    of the block that ends it (an import staged now, published with the
    next compile): `begin()` on a begun transaction does nothing. `stage()`
    before `begin()` makes the staging folder without the lock, for work
    that must not hold the workspace while it runs (a measurement).
    """

    def __init__(self, root: Path, *, wait: float = 0.0):
        self.root = Path(root)
        self._lock = WorkspaceLock(self.root, wait=wait)
        self._staging: Path | None = None
        self._publish: Publish | None = None

    @property
    def staging(self) -> Path:
        """The staging folder (made now if it was not): everything to publish is written here first."""
        return self.stage()

    @property
    def publish(self) -> Publish:
        """The moves and deletions `commit` applies, from the staging folder into the workspace."""
        if self._publish is None:
            self._publish = Publish(self.root, self.stage())
        return self._publish

    @property
    def begun(self) -> bool:
        return self._lock.held

    def stage(self) -> Path:
        if self._staging is None:
            self._staging = new_staging(self.root)
        return self._staging

    def begin(self) -> "Transaction":
        if self.begun:
            return self
        self._lock.acquire()
        try:
            recover(self.root)  # a publish committed by a writer that died, and its leftovers
        except BaseException:
            self._lock.release()
            raise
        return self

    def commit(self, manifest_text: str) -> None:
        """Publish the staged files with this manifest text (written last); needs the lock."""
        if not self.begun:
            raise RuntimeError("commit() outside the workspace's lock")
        self.publish.commit(manifest_text)

    def end(self) -> None:
        """Remove the staging folder and release the lock; safe to call twice, and after a failed begin."""
        staging, self._staging, self._publish = self._staging, None, None
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        self._lock.release()

    def __enter__(self) -> "Transaction":
        try:
            return self.begin()
        except BaseException:
            self.end()  # a folder stage() made before a lock that could not be had
            raise

    def __exit__(self, *exc) -> None:
        self.end()


def recover_if_free(root: Path) -> None:
    """Finish a committed publish and drop dead writers' staging folders, unless a writer is at work."""
    lock = WorkspaceLock(root)
    try:
        lock.acquire()
    except StudioError:  # a writer is at work (its manifest is always whole), or a read-only folder
        return
    try:
        recover(root)
    finally:
        lock.release()
