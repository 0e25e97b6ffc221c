"""Read text files as bytes and decode them with an error that names the file and byte offset."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import BadFile, os_error


def decode(data: bytes, path: str | Path) -> str:
    """UTF-8 text of `data`; BadFile with line, column and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BadFile(path, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset {exc.start} "
                            "cannot be decoded", line=line, col=col) from None


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise BadFile(path, "is a folder, not a file") from None
    except OSError as exc:
        raise os_error(path, exc, "cannot read") from None


def read_text(path: str | Path) -> str:
    """The UTF-8 text of `path`; every failure is a BadFile naming it."""
    return decode(read_bytes(path), path)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file and rename, so readers see the old or the new text, never half."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_error(path, exc, "cannot write") from None


def check_output_file(path: str | Path) -> Path:
    """Refuse an output path that cannot be written before any work is done."""
    path = Path(path)
    if path.is_dir():
        raise BadFile(path, "is a folder; expected a file name to write")
    if not path.parent.is_dir():
        raise BadFile(path, f"folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise BadFile(path, f"folder {path.parent} is not writable")
    return path


def check_output_dir(path: str | Path) -> Path:
    """A folder outputs go into: created if missing, refused if it is a file or not writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BadFile(path, "is a file; expected a folder for the outputs")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(path, exc, "cannot create folder") from None
    if not os.access(path, os.W_OK):
        raise BadFile(path, "folder is not writable")
    return path
