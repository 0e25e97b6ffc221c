"""The content hash of a model: the file and its ONNX external data files, in one SHA-256.

Recorded in the manifest at import (`source_sha256`): reopening a model whose content is unchanged
shows its workspace as it was instead of compiling it again. Content, not path or mtime: a model
re-exported to the same bytes is unchanged, one rewritten in place (same inode) is changed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CHUNK = 1 << 20


def model_files(model: Path) -> list[Path]:
    model = Path(model).resolve()
    files = [model]
    if model.suffix.lower() == ".onnx":
        from ..compile.onnx_model import external_data_files

        files += sorted(external_data_files(model))
    return files


def model_digest(model: Path) -> str:
    """SHA-256 over each file's name (relative to the model's folder), size and bytes."""
    model = Path(model).resolve()
    digest = hashlib.sha256()
    for path in model_files(model):
        name = path.name if path == model else str(path.relative_to(model.parent))
        # fsencode: a name with undecodable bytes hashes as those bytes (UTF-8 names as before)
        digest.update(os.fsencode(name) + f"\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
    return digest.hexdigest()
