"""Publish staged files into a workspace as one step, with the manifest last.

A compile writes everything into a staging folder. Publishing then moves
each staged file into place with `os.replace` and writes the manifest. To
make the whole set of moves atomic, the plan (moves, deletions of our own
old files, the new manifest text) is first written to `publish.journal`
with a rename: that rename is the commit point.

- Interrupted before the commit: the journal does not exist, the staging
  folder is a leftover of a dead process (removed on the next open) and
  the workspace is exactly as before.
- Interrupted after it: the next writer (or open) finds the journal and
  rolls it forward; every step is idempotent, so a half-done roll forward
  is finished the same way.

A journal may come with a workspace someone sent: before any step, every path it
names is checked to stay inside the workspace without passing a symbolic link
(confine.py); one that does not is refused with one line and left unapplied.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadFile, WorkspaceError
from ..textio import parse_json, read_bytes, write_text_atomic
from .confine import inside

JOURNAL = "publish.journal"
STAGING_PREFIX = ".staging-"
MANIFEST = "manifest.json"


@dataclass
class Publish:
    """Moves from a staging folder into `root`; paths are relative to each."""

    root: Path
    staging: Path
    moves: list[tuple[str, str]] = field(default_factory=list)  # (staged, published)
    deletes: list[str] = field(default_factory=list)  # files the app created earlier and no longer uses

    def __post_init__(self) -> None:
        self.root, self.staging = Path(self.root).absolute(), Path(self.staging).absolute()

    def move(self, staged: Path | str, dest: str) -> Path:
        staged = Path(staged)
        # A path under the staging folder may come relative to the current folder (a relative
        # workspace root); anything else is relative to the staging folder itself.
        if staged.absolute().is_relative_to(self.staging):
            rel = staged.absolute().relative_to(self.staging)
        elif staged.is_absolute():
            raise ValueError(f"{staged} is not in the staging folder {self.staging}")
        else:
            rel = staged
        self.moves.append((str(rel), dest))
        return self.root / dest

    def delete(self, dest: str) -> None:
        if dest not in self.deletes:
            self.deletes.append(dest)

    def commit(self, manifest_text: str) -> None:
        """Write the journal (the commit point), then apply it."""
        plan = {"staging": self.staging.name, "moves": self.moves, "deletes": self.deletes,
                "manifest": manifest_text}
        _check_confined(self.root, self.staging.name, self.moves, self.deletes)
        write_text_atomic(self.root / JOURNAL, json.dumps(plan))
        _fsync_dir(self.root)
        apply_journal(self.root)


def apply_journal(root: Path) -> bool:
    """Roll a committed publish forward; False when there was none. Call with the workspace locked."""
    root = Path(root)
    path = root / JOURNAL
    if not path.is_file():
        return False
    try:  # a regular file, JSON without NaN or nesting deeper than the parser goes (BadFile names it)
        plan = parse_json(read_bytes(path), path, "a publish journal (JSON)")
        staging = _inside(root, plan["staging"])
        moves = [(_inside(staging, s), _inside(root, d)) for s, d in plan["moves"]]
        deletes = [_inside(root, d) for d in plan["deletes"]]
        manifest = str(plan["manifest"])
    except BadFile as exc:
        raise WorkspaceError(path, f"{exc.reason}; remove it to keep the previous build", line=exc.line,
                             col=exc.col) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise WorkspaceError(path, f"unreadable publish journal ({exc}); remove it to keep the previous build")
    if not staging.name.startswith(STAGING_PREFIX):
        raise WorkspaceError(path, "publish journal names no staging folder")
    try:
        _check_confined(root, plan["staging"], plan["moves"], plan["deletes"])
    except WorkspaceError as exc:
        raise WorkspaceError(path, f"{exc.reason}; the publish journal is refused and left unapplied") from None
    for src, dest in moves:  # every move checked before the first is made
        why = _cannot_move(src, dest)
        if why is not None:
            raise WorkspaceError(path, f"cannot move {src.name} onto {_plan_name(root, dest)}: {why}; "
                                       "the publish journal is refused and left unapplied")
    for src, dest in moves:
        if src.exists():  # gone: moved by an earlier, interrupted roll forward
            inside(root, dest, leaf_link_ok=True, where=path)  # again: an earlier move may have made a link
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dest)
            except OSError as exc:
                raise WorkspaceError(path, f"cannot move {src.name} onto {_plan_name(root, dest)}: "
                                           f"{exc.strerror or exc}; the rest of the publish journal is left "
                                           "unapplied") from None
    for dest in deletes:
        inside(root, dest, leaf_link_ok=True, where=path)
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest, ignore_errors=True)
        else:
            dest.unlink(missing_ok=True)
    write_text_atomic(root / MANIFEST, manifest)
    path.unlink()
    shutil.rmtree(staging, ignore_errors=True)
    return True


def _cannot_move(src: Path, dest: Path) -> str | None:
    """Why os.replace(src, dest) would fail on what is there (a folder onto a file, a file onto a
    folder, onto a folder with files in it), or None."""
    if not os.path.lexists(src):
        return None  # moved by an earlier, interrupted roll forward
    try:
        src_dir, dest_mode = src.is_dir() and not src.is_symlink(), os.lstat(dest).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(dest_mode):
        if not src_dir:
            return "a file onto a folder"
        if any(dest.iterdir()):
            return "a folder onto a folder that is not empty"
    elif src_dir:
        return "a folder onto a file"
    return None


def _plan_name(root: Path, dest: Path) -> str:
    return str(dest.relative_to(root)) if dest.is_relative_to(root) else str(dest)


def _check_confined(root: Path, staging: str, moves, deletes) -> None:
    """Every path of a publish stays inside `root` and passes no symbolic link, or nothing is applied."""
    inside(root, staging)
    for src, dest in moves:
        staged = inside(root, Path(staging) / src)  # a staged link would be moved in as a link
        if staged.is_dir():  # nor may a staged folder bring one in
            for folder, dirs, files in os.walk(staged):
                for name in dirs + files:
                    if os.path.islink(os.path.join(folder, name)):
                        inside(root, Path(folder, name).relative_to(Path(os.path.realpath(root))))
        inside(root, dest, leaf_link_ok=True)  # os.replace replaces a link, never follows it
    for dest in deletes:
        inside(root, dest, leaf_link_ok=True)  # a link is unlinked, never followed
    inside(root, MANIFEST, leaf_link_ok=True)


def _inside(base: Path, rel: str) -> Path:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"path {rel!r} leaves {base}")
    return base / p


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_staging(root: Path) -> Path:
    """A fresh staging folder in `root`, named after this process so leftovers can be told apart."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=root))


def clean_stale_staging(root: Path) -> list[Path]:
    """Remove staging folders of processes that are gone; returns what was removed."""
    from .lock import pid_alive

    removed = []
    for entry in Path(root).glob(STAGING_PREFIX + "*"):
        pid = entry.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid)):
            continue
        if pid.isdigit() and int(pid) == os.getpid():
            continue  # ours: in use by another job of this process, or removed by it
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def recover(root: Path) -> None:
    """Finish a committed publish and drop leftovers of dead writers. Call with the workspace locked."""
    apply_journal(root)
    clean_stale_staging(root)
