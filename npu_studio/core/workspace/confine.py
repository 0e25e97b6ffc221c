"""Writes stay inside the workspace: the one check before any path is written, renamed or deleted.

A workspace may come from someone else, and a symbolic link in it (`variants` -> `/home/you`)
would carry a write, a rename or a delete anywhere. So every path a writer names is taken
relative to the workspace's real folder, and no folder on the way to it, below the workspace,
may be a symbolic link; the last name may be one only where the operation replaces or removes
the link itself (`os.replace`, `unlink`), never where it would open it. Nothing is followed,
copied or repaired: the write is refused with one line naming the link.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ..errors import WorkspaceError
from ..textio import write_text_atomic


def inside(root: Path, path: Path | str, *, leaf_link_ok: bool = False, where: Path | None = None) -> Path:
    """`path` (relative to `root`, or absolute under it) as an absolute path under the workspace's real
    folder; WorkspaceError (naming `where`, default the workspace) when it leaves the workspace or
    goes through a symbolic link inside it."""
    root = Path(root).absolute()
    real_root = Path(os.path.realpath(root))
    rel = _relative(root, real_root, Path(path), where)
    current = real_root
    for i, part in enumerate(rel.parts):
        current = current / part
        last = i == len(rel.parts) - 1
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break  # nothing further exists: the writer makes real folders from here on
        except OSError as exc:
            raise WorkspaceError(where or root, f"cannot check {rel}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(mode) and not (last and leaf_link_ok):
            link = Path(*rel.parts[: i + 1])
            raise WorkspaceError(where or root, f"{link} is a symbolic link; refusing to write {rel} through it "
                                                "(a workspace's links are never followed for a write)")
        if not last and not stat.S_ISDIR(mode):
            raise WorkspaceError(where or root, f"{Path(*rel.parts[: i + 1])} is not a folder; cannot write {rel}")
    return real_root / rel


def folder_inside(root: Path, path: Path | str, *, where: Path | None = None) -> Path:
    """`inside`, then the folder made (each level checked again, so a link made meanwhile is refused too)."""
    target = inside(root, path, where=where)
    real_root = Path(os.path.realpath(Path(root).absolute()))
    current = real_root
    for part in target.relative_to(real_root).parts:
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            pass
        if os.path.islink(current) or not current.is_dir():
            inside(root, target, where=where)  # raises, naming the link or the file in the way
    return target


def write_text_inside(root: Path, path: Path | str, text: str) -> Path:
    """Write `text` atomically at `path` in the workspace, its folders made, nothing followed."""
    target = inside(root, path, leaf_link_ok=True)  # the atomic write renames over a link, never opens it
    folder_inside(root, target.parent)
    write_text_atomic(target, text)
    return target


def remove_inside(root: Path, path: Path | str, *, where: Path | None = None) -> None:
    """Delete the file or folder tree at `path` in the workspace (nothing there: nothing done). A link
    on the way or at `path` itself is refused, never followed nor removed in passing: it may be what the
    user put there. Below `path`, shutil.rmtree removes links without following them."""
    target = inside(root, path, where=where)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)


def replace_inside(root: Path, src: Path | str, dest: Path | str, *, where: Path | None = None) -> None:
    """`os.replace(src, dest)`, both confined to the workspace (the names themselves may be links:
    a rename moves or replaces the link, never what it points to)."""
    os.replace(inside(root, src, leaf_link_ok=True, where=where), inside(root, dest, leaf_link_ok=True, where=where))


def copy_inside(root: Path, src: Path | str, dest: Path | str, *, where: Path | None = None) -> Path:
    """Copy the file `src` (read as it is) to `dest` in the workspace: into a new temporary beside it,
    then renamed over it, so a link at `dest` is replaced, never written through."""
    target = inside(root, dest, leaf_link_ok=True, where=where)
    folder_inside(root, target.parent, where=where)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        with open(src, "rb") as fin, open(tmp, "xb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        shutil.copystat(src, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def copy_tree_inside(root: Path, src: Path, dest: Path | str, *, where: Path | None = None) -> None:
    """Copy the regular files under `src` to `dest` in the workspace, each through `copy_inside`
    (links under `src` are skipped: a copy never carries one into the workspace)."""
    for path in sorted(Path(src).rglob("*")):
        if path.is_file() and not path.is_symlink():
            copy_inside(root, path, Path(dest) / path.relative_to(src), where=where)


def _relative(root: Path, real_root: Path, path: Path, where: Path | None) -> Path:
    if path.is_absolute():
        for base in (root, real_root):
            if path.is_relative_to(base):
                path = path.relative_to(base)
                break
        else:
            raise WorkspaceError(where or root, f"{path} is outside the workspace; refusing to write it")
    if not path.parts or ".." in path.parts or "\0" in str(path):
        raise WorkspaceError(where or root, f"{str(path)[:80]!r} leaves the workspace; refusing to write it")
    return path
