"""The folder a sweep writes its results into: one it made, never a folder of the user's.

A results folder is marked by OUT/sweep.json with `"made_by": "npu-studio sweep"`, written
before any other file. A sweep writes only into a folder that is new, empty, or so marked;
anything else is refused with one line (the user's `results.csv` or `cache/` are never
overwritten or deleted). Without --out, results go into a new folder under the studio's home
(paths.sweeps_dir()): `<spec name>-<digest of the spec's path>` and, when that is taken by
another run, `-2`, `-3`, ...; `--resume` and the app's Run sweep reuse the latest of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from ..errors import BadFile, os_error
from ..paths import sweeps_dir
from ..textio import parse_json, read_bytes, write_text_atomic

RECORD = "sweep.json"  # OUT/sweep.json: who made the folder, the spec and the models' paths
MADE_BY = "npu-studio sweep"
MAX_SIBLINGS = 10_000  # `<name>-N` folders tried for a new default folder


def read_record(out: Path, *, quiet: bool = False) -> dict | None:
    """OUT/sweep.json when it is one a sweep wrote; else None (quiet) or a BadFile naming it."""
    path = Path(out) / RECORD
    try:
        if not path.is_file():
            raise BadFile(path, "missing")
        data = parse_json(read_bytes(path), path, "a sweep record")
        if not isinstance(data, dict) or data.get("made_by") != MADE_BY:
            raise BadFile(path, f"not written by {MADE_BY}")
        return data
    except BadFile:
        if quiet:
            return None
        raise


def claim(out: str | Path, spec_path: Path, models: dict[str, str] | None = None) -> Path:
    """Make `out` this sweep's results folder: created when missing; refused (one line) when it is
    a file, not writable, or a folder with files a sweep did not make."""
    out = Path(out)
    if os.fsencode(out).find(b"\0") >= 0:
        raise BadFile(out, "--out: a path cannot hold a NUL byte")
    if out.exists() and not out.is_dir():
        raise BadFile(out, "--out: is a file; expected a folder for the results")
    previous = read_record(out, quiet=True) if out.is_dir() else None
    if out.is_dir() and previous is None and any(out.iterdir()):
        raise BadFile(out, f"--out: not a sweep results folder (no {RECORD} written by {MADE_BY}); "
                      "name a new or empty folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(out, exc, "--out: cannot create folder") from None
    record = {"made_by": MADE_BY, "spec": str(Path(spec_path).resolve()),
              "models": models if models is not None else (previous or {}).get("models", {})}
    write_text_atomic(out / RECORD, json.dumps(record, indent=1))  # a BadFile (EROFS, EACCES, ENOSPC)
    return out


def default_stem(spec_path: Path) -> str:
    path = Path(spec_path).resolve()
    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:8]
    stem = re.sub(r"[^\w.+-]", "_", path.stem, flags=re.ASCII)[:64]
    return f"{stem}-{digest}"


def latest_default(spec_path: Path) -> Path | None:
    """The newest default results folder of this spec a sweep made, if any."""
    home, stem = sweeps_dir(), default_stem(spec_path)
    if not home.is_dir():
        return None
    pattern = re.compile(re.escape(stem) + r"(-\d+)?")
    mine = [p for p in home.iterdir() if pattern.fullmatch(p.name) and p.is_dir() and read_record(p, quiet=True) is not None]
    return max(mine, key=lambda p: (p.stat().st_mtime_ns, p.name), default=None)


def new_default(spec_path: Path) -> Path:
    """A folder under the studio's home that did not exist before (made here, race-free)."""
    home, stem = sweeps_dir(), default_stem(spec_path)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(home, exc, "cannot create the sweeps folder") from None
    for n in range(1, MAX_SIBLINGS + 1):
        candidate = home / (stem if n == 1 else f"{stem}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise os_error(candidate, exc, "cannot create folder") from None
        return candidate
    raise BadFile(home, f"{MAX_SIBLINGS} result folders of {stem} already; pass --out")
